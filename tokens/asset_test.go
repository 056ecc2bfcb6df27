package tokens

import (
	"testing"
	"testing/fstest"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// TestBPEAssetCheck: the check at Open finds the o200k ranks in the binary,
// and fails on a build without them (or with an empty file), so a missing
// asset is an error at Open, not a panic at the first count.
func TestBPEAssetCheck(t *testing.T) {
	if err := checkBPEAsset(assets.Assets, o200kAsset); err != nil {
		t.Fatalf("the built-in assets: %v", err)
	}
	if err := checkBPEAsset(fstest.MapFS{"cl100k_base.tiktoken": {Data: []byte("x 0\n")}}, o200kAsset); err == nil {
		t.Fatal("no error for assets without o200k_base.tiktoken")
	}
	if err := checkBPEAsset(fstest.MapFS{o200kAsset: {Data: nil}}, o200kAsset); err == nil {
		t.Fatal("no error for an empty o200k_base.tiktoken")
	}
}

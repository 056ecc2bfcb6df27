package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// npmEpoch is the modification time `npm pack` gives every entry
// (1985-10-26T08:15:00Z): tarballs of the same files are the same bytes.
func npmEpoch() time.Time { return time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC) }

// writeTarball writes files as an npm package tarball (gzipped tar, every
// entry under package/, as `npm pack` makes it) to dst, atomically.
func writeTarball(dst string, files []file) error {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return fmt.Errorf("%s: %w", dst, err)
	}
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := checkName(f.name); err != nil {
			return fmt.Errorf("%s: %w", dst, err)
		}
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     "package/" + f.name,
			Size:     int64(len(f.data)),
			Mode:     f.mode,
			ModTime:  npmEpoch(),
			Format:   tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %s: %w", dst, f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return fmt.Errorf("%s: %s: %w", dst, f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("%s: %w", dst, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("%s: %w", dst, err)
	}
	return writeFileAtomic(dst, buf.Bytes(), 0o644)
}

// writeTree writes files under dir (the package unpacked).
func writeTree(dir string, files []file) error {
	for _, f := range files {
		if err := checkName(f.name); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		if err := os.WriteFile(p, f.data, os.FileMode(f.mode)); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
	}
	return nil
}

// checkName refuses a package path that is not a clean relative path.
func checkName(name string) error {
	if name == "" || path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
		return fmt.Errorf("package file %q is not a clean relative path", name)
	}
	return nil
}

// writeFileAtomic writes data to a temporary file beside dst and renames
// it into place.
func writeFileAtomic(dst string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("%s: %w", dst, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-"+filepath.Base(dst)+"-*")
	if err != nil {
		return fmt.Errorf("%s: %w", dst, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", dst, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", dst, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", dst, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("%s: %w", dst, err)
	}
	return nil
}

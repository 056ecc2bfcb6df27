package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{First: 50 * time.Millisecond, Max: 4 * time.Second}
	want := []time.Duration{50, 100, 200, 400, 800, 1600, 3200, 4000, 4000}
	for n, w := range want {
		if got := b.Delay(n); got != w*time.Millisecond && !(w == 4000 && got == 4*time.Second) {
			t.Errorf("Delay(%d) = %v, want %v", n, got, w*time.Millisecond)
		}
	}
	if got := b.Delay(1 << 20); got != 4*time.Second {
		t.Errorf("Delay(huge) = %v, want the cap", got)
	}
	u := Backoff{First: time.Millisecond}
	if got := u.Delay(10); got != 1024*time.Millisecond {
		t.Errorf("uncapped Delay(10) = %v, want 1.024s", got)
	}
}

var errPass = errors.New("passes")

func TestDoRetriesWhatPasses(t *testing.T) {
	calls := 0
	v, err := Do(context.Background(), Backoff{First: time.Microsecond}, 4, func(err error) bool { return errors.Is(err, errPass) },
		func() (int, error) {
			calls++
			if calls < 3 {
				return 0, errPass
			}
			return 7, nil
		})
	if v != 7 || err != nil || calls != 3 {
		t.Fatalf("Do = %d, %v after %d calls; want 7, nil after 3", v, err, calls)
	}
}

func TestDoStops(t *testing.T) {
	other := errors.New("refused")
	retryable := func(err error) bool { return errors.Is(err, errPass) }
	calls := 0
	_, err := Do(context.Background(), Backoff{First: time.Microsecond}, 4, retryable, func() (int, error) { calls++; return 0, other })
	if !errors.Is(err, other) || calls != 1 {
		t.Errorf("an error that does not pass: %v after %d calls; want it after 1", err, calls)
	}
	calls = 0
	_, err = Do(context.Background(), Backoff{First: time.Microsecond}, 4, retryable, func() (int, error) { calls++; return 0, errPass })
	if !errors.Is(err, errPass) || calls != 5 {
		t.Errorf("always failing: %v after %d calls; want the error after 1+4", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	_, err = Do(ctx, Backoff{First: time.Hour}, 4, retryable, func() (int, error) {
		calls++
		cancel()
		return 0, errPass
	})
	if !errors.Is(err, errPass) || calls != 1 {
		t.Errorf("ctx ended during the pause: %v after %d calls; want the call's error after 1", err, calls)
	}
}

func TestWait(t *testing.T) {
	if !Wait(context.Background(), time.Microsecond) {
		t.Error("Wait of a live context reported false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Wait(ctx, time.Hour) {
		t.Error("Wait of a done context reported true")
	}
}

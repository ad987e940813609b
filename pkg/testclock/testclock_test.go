package testclock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/testclock"
)

func TestClock(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := testclock.New(t0)
	if !c.Now().Equal(t0) {
		t.Fatalf("Now = %v, want %v", c.Now(), t0)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { c.Add(time.Second); _ = c.Now() })
	}
	wg.Wait()
	if want := t0.Add(10 * time.Second); !c.Now().Equal(want) {
		t.Fatalf("after 10 concurrent Add(1s): %v, want %v", c.Now(), want)
	}
	c.Set(t0)
	if !c.Now().Equal(t0) {
		t.Fatalf("Set: %v", c.Now())
	}
}

//go:build !torch

package dragon

import (
	"context"
	"errors"
	"testing"
)

func TestWithoutTorch(t *testing.T) {
	if _, err := NewRuntime(RuntimeOptions{}); !errors.Is(err, ErrNoTorch) {
		t.Errorf("NewRuntime = %v; want ErrNoTorch", err)
	}
	if _, err := Bench(context.Background(), BenchOptions{Quick: true}, nil); !errors.Is(err, ErrNoTorch) {
		t.Errorf("Bench = %v; want ErrNoTorch", err)
	}
}

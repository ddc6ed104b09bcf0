package corpus

import (
	"errors"
	"strings"
	"testing"

	"dragonx/internal/safeio"
)

// TestReadOverlongLine: a line over the cap is an error naming the line
// (it was "bufio.Scanner: token too long", without one).
func TestReadOverlongLine(t *testing.T) {
	_, err := Read(strings.NewReader("\n" + strings.Repeat("x", maxLine+1)))
	if !errors.Is(err, safeio.ErrLineTooLong) || !strings.Contains(err.Error(), "corpus: line 2:") {
		t.Errorf("err = %v, want a line too long at line 2", err)
	}
}

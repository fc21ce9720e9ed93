package session

import (
	"errors"
	"strings"
	"testing"
)

func TestLineLimit(t *testing.T) {
	t.Parallel()
	var over error
	r := &lineLimit{r: strings.NewReader("abc\ndefg\nhi\n" + strings.Repeat("x", 6) + "\n"), max: 5,
		over: func(err error) { over = err }}
	var got strings.Builder
	buf := make([]byte, 3)
	var err error
	for err == nil {
		var n int
		n, err = r.Read(buf)
		got.Write(buf[:n])
	}
	if !errors.Is(err, ErrMessageTooLarge) || over == nil {
		t.Fatalf("err = %v, over = %v; want ErrMessageTooLarge", err, over)
	}
	// Lines of up to 5 bytes and their newline pass; the 6th x does not.
	if want := "abc\ndefg\nhi\nxxxxx"; got.String() != want {
		t.Errorf("read %q, want %q", got.String(), want)
	}
}

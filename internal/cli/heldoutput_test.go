package cli

import (
	"bytes"
	"testing"
)

// TestHeldOutputKeepsWhatWasWritten: a filter's output held in blocks (heldOutput) is written
// out whole and in order, whatever the sizes of the writes and wherever a block ends.
func TestHeldOutputKeepsWhatWasWritten(t *testing.T) {
	var h heldOutput
	var want bytes.Buffer
	for i := 0; want.Len() < 3*heldBlockMax; i++ {
		p := bytes.Repeat([]byte{byte('a' + i%26)}, (i*7919)%(heldBlockMax/3)+i%3)
		switch i % 3 {
		case 0:
			h.Write(p)
		case 1:
			h.WriteString(string(p))
		default:
			h.WriteByte(p[0])
			p = p[:1]
		}
		want.Write(p)
	}
	var got bytes.Buffer
	if n, err := h.WriteTo(&got); err != nil || n != int64(want.Len()) || h.Len() != want.Len() || !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("wrote %d bytes (%v), Len %d; want %d, equal: %v", n, err, h.Len(), want.Len(), bytes.Equal(got.Bytes(), want.Bytes()))
	}
	for i, b := range h.blocks[:len(h.blocks)-1] {
		if len(b) != cap(b) {
			t.Errorf("block %d holds %d of %d bytes, and another follows", i, len(b), cap(b))
		}
	}
}

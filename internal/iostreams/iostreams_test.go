package iostreams

import "testing"

func TestColorAllowed(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, true},
		{map[string]string{"NO_COLOR": "1"}, false},
		{map[string]string{"NO_COLOR": ""}, true}, // https://no-color.org: present and not empty
		{map[string]string{"TERM": "dumb"}, false},
	}
	for _, tt := range tests {
		if got := colorAllowed(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("colorAllowed(%v) = %v, want %v", tt.env, got, tt.want)
		}
	}
}

func TestTestStreamsAreNotTerminals(t *testing.T) {
	t.Setenv("COLUMNS", "") // the fallback is 80 unless COLUMNS says otherwise
	s, _, _, _ := Test()
	if s.IsStdoutTTY() || s.CanPrompt() || s.ColorEnabled() || s.TerminalWidth() != 80 {
		t.Fatalf("test streams: tty %v prompt %v color %v width %d", s.IsStdoutTTY(), s.CanPrompt(), s.ColorEnabled(), s.TerminalWidth())
	}
	s.SetTTY(true, true, true)
	s.SetWidth(120)
	if !s.CanPrompt() || s.TerminalWidth() != 120 {
		t.Fatal("SetTTY/SetWidth did not take")
	}
}

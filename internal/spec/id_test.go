package spec

import (
	"strings"
	"testing"
)

func TestValidateID(t *testing.T) {
	tests := []struct {
		id      string
		wantErr string // "" for valid
	}{
		{"db", ""},
		{"web[0]", ""},
		{"mysql[12]", ""},
		{"ebs_prod_db1", ""},
		{"a.b-c_d", ""},
		{"a..b", ""}, // one path element; cannot climb
		{"...", ""},
		{"VOLUME_NAME", ""},
		{"café", ""},
		{strings.Repeat("a", MaxIDLength), ""},
		{"", "must not be empty"},
		{".", "not allowed"},
		{"..", "not allowed"},
		{"../etc", `must not contain "/"`},
		{"a/b", `must not contain "/"`},
		{"/", `must not contain "/"`},
		{"-rf", `must not start with "-"`},
		{"--help", `must not start with "-"`},
		{"a\x00b", "control characters"},
		{"a\nb", "control characters"},
		{"tab\there", "control characters"},
		{"a\u0085b", "control characters"},
		{"\xff\xfe", "not valid UTF-8"},
		{strings.Repeat("a", MaxIDLength+1), "the limit is 128"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			err := ValidateID("volume ID", tt.id)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateID(%q) = %v, want nil", tt.id, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ValidateID(%q) = %v, want an error containing %q", tt.id, err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "volume ID") {
				t.Errorf("error %q does not name what was checked", err)
			}
		})
	}
}

func TestAllocNamesAreValidIDs(t *testing.T) {
	for i := 0; i < 3; i++ {
		if err := ValidateID("alloc name", AllocName("web", i)); err != nil {
			t.Errorf("%s: %v", AllocName("web", i), err)
		}
	}
}

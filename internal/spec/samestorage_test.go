package spec

import "testing"

// Bytes that are not UTF-8 are compared as bytes: strings.EqualFold decodes each as U+FFFD,
// which took two distinct IDs for one (a create answered with the second refused, its delete
// refused). Case around them still folds.
func TestSameStorageIDKeepsDistinctInvalidBytesApart(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"vol-\xff", "vol-\xfe", false},
		{"\xffvol", "\xfevol", false},
		{"vol-\xff", "vol-\xff\xff", false},
		{"vol-\xff", "vol-\ufffd", false},
		{"vol-\xff", "VOL-\xff", true},
		{" vol-\xffa ", "VOL-\xffA", true},
		{"caf\u00e9-\xff", "CAFE\u0301-\xff", true},
	} {
		if got := SameStorageID(tc.a, tc.b); got != tc.same {
			t.Errorf("SameStorageID(%+q, %+q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

package translate

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0s", 0},
		{"1h", time.Hour},
		{"500ms", 500 * time.Millisecond},
		{"10s30m1h", time.Hour + 30*time.Minute + 10*time.Second},
		{"7230s", 2*time.Hour + 30*time.Second},
		{"100ms200ms300ms", 600 * time.Millisecond},
		{"1h2h20m10m", 3*time.Hour + 30*time.Minute},
		{"99999h", 99999 * time.Hour},
		{"00010s", 10 * time.Second},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "0", "1", "1m1", "1d", "1.5h", "-15m", "999999h", "1h30m10s20ms50h", "1us", " 1s", "1s\n"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) succeeded, want an error", bad)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{time.Hour + 30*time.Minute + 10*time.Second, "1h30m10s"},
		{2*time.Hour + 30*time.Second, "2h30s"},
		{600 * time.Millisecond, "600ms"},
		{1500 * time.Millisecond, "1s500ms"},
	}
	for _, tt := range tests {
		got, err := FormatDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []time.Duration{-time.Second, time.Microsecond, 100000 * time.Hour} {
		if _, err := FormatDuration(bad); err == nil {
			t.Errorf("FormatDuration(%v) succeeded, want an error", bad)
		}
	}
}

package stages

import "testing"

func TestSlurmTime(t *testing.T) {
	for in, want := range map[string]string{
		"2h":         "0-02:00:00",
		"90m":        "0-01:30:00",
		"1h30m15s":   "0-01:30:15",
		"25h":        "1-01:00:00",
		"1500ms":     "0-00:00:02", // rounded up to a whole second
		"90":         "90",         // Slurm's own forms pass unchanged
		"30:00":      "30:00",
		"1-12":       "1-12",
		"2-00:00:00": "2-00:00:00",
	} {
		got, err := slurmTime(in)
		if err != nil || got != want {
			t.Errorf("slurmTime(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "2 hours", "0s", "-1h", "1:2:3:4", "2d"} {
		if got, err := slurmTime(bad); err == nil {
			t.Errorf("slurmTime(%q) = %q, want an error", bad, got)
		}
	}
}

func TestCheckExtraArg(t *testing.T) {
	for arg, ok := range map[string]bool{
		"--account=abc": true,
		"--qos=high":    true,
		"-A":            true,
		"account=abc":   false,
		"--array=0-3":   false,
		"--job-name=x":  false,
		"-J":            false,
		"-Jname":        false,
		"--output=x":    false,
		"--wrap=true":   false,
		"--chdir=/":     false,
	} {
		if got := checkExtraArg(arg) == ""; got != ok {
			t.Errorf("checkExtraArg(%q) accepted = %v, want %v", arg, got, ok)
		}
	}
}

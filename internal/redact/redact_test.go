package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://cache.example.com/dx", "https://cache.example.com/dx"},
		{"https://alice:hunter2@cache.example.com/dx", "https://REDACTED@cache.example.com/dx"},
		{"https://TOKEN@cache.example.com", "https://REDACTED@cache.example.com"},
		{"https://cache.example.com/dx?token=hunter2&x=1#frag", "https://cache.example.com/dx?token=REDACTED&x=REDACTED"},
		{"file:///mnt/team/cache", "file:///mnt/team/cache"},
		{"https://alice:hun ter2@cache.example.com/%zz", "https://cache.example.com/... (not a valid URL)"},
		{"https://alice:pa/ss@cache.example.com:x/dx", "https://cache.example.com:x/... (not a valid URL)"},
		{"https://alice:hunter2@host:port/dx", "https://host:port/... (not a valid URL)"},
		{"hunter2 is not a url\x7f", "(not a valid URL)"},
		{"mailto:hunter2", "mailto:... (not a valid URL)"},
	} {
		got := URL(c.in)
		if got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.Contains(got, "hunter2") || strings.Contains(got, "TOKEN") || strings.Contains(got, "pa/ss") {
			t.Errorf("URL(%q) = %q leaks the secret", c.in, got)
		}
	}
}

func TestArgsAndText(t *testing.T) {
	args := Args([]string{"dragonx", "run", "-remote", "https://u:hunter2@h/x", "-remote=https://u:hunter2@h/y", "exp.hcl"})
	got := strings.Join(args, " ")
	if want := "dragonx run -remote https://REDACTED@h/x -remote=https://REDACTED@h/y exp.hcl"; got != want {
		t.Errorf("Args = %q, want %q", got, want)
	}
	if got := Text(`remote "https://u:hunter2@h/x" is down`); got != `remote "https://REDACTED@h/x" is down` {
		t.Errorf("Text = %q", got)
	}
}

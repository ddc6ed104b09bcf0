package torchbin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "dragonx")
	torch := filepath.Join(dir, Name)
	other := filepath.Join(t.TempDir(), "custom-torch")
	for _, p := range []string{exe, torch, other} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	self := func() (string, error) { return exe, nil }
	selfElsewhere := func() (string, error) { return filepath.Join(t.TempDir(), "dragonx"), nil }
	onPath := func(string) (string, error) { return "/opt/bin/" + Name, nil }
	notOnPath := func(string) (string, error) { return "", errors.New("not found") }

	for _, c := range []struct {
		name     string
		explicit string
		self     func() (string, error)
		lookPath func(string) (string, error)
		want     string
		wantErr  string
	}{
		{"beside the executable", "", self, onPath, torch, ""},
		{"explicit wins", other, self, onPath, other, ""},
		{"explicit not executable", plain, self, onPath, "", "not an executable file"},
		{"on PATH", "", selfElsewhere, onPath, "/opt/bin/" + Name, ""},
		{"nowhere", "", selfElsewhere, notOnPath, "", "neither next to this executable nor on PATH"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := find(c.explicit, c.self, c.lookPath)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("find = %q, %v; want an error containing %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("find = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want []string
	}{
		{nil, []string{"OMP_WAIT_POLICY=PASSIVE"}},
		{map[string]string{"OMP_WAIT_POLICY": "ACTIVE"}, nil},
		{map[string]string{"GOMP_SPINCOUNT": "1000"}, nil},
		{map[string]string{"OMP_NUM_THREADS": "2"}, []string{"OMP_WAIT_POLICY=PASSIVE"}},
	} {
		got := Env(func(k string) string { return c.env[k] })
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("Env(%v) = %q, want %q", c.env, got, c.want)
		}
	}
}

//go:build torch

package torchrt

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"dragonx/internal/torchbin"
)

// TestWaitPolicy: a process that links libtorch never runs with libgomp's
// spinning default. Started without a policy, it starts itself again with
// OMP_WAIT_POLICY=PASSIVE before any test runs; a spin count a person set
// is kept (a policy too: torchbin.TestEnv).
func TestWaitPolicy(t *testing.T) {
	if os.Getenv("TORCHRT_PRINT_POLICY") == "1" {
		fmt.Printf("policy=%s\n", WaitPolicy())
		return
	}
	if WaitPolicy() == "" {
		t.Fatal("this test process runs with libgomp's spinning default")
	}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, "PASSIVE"},
		{[]string{"GOMP_SPINCOUNT=1000"}, "GOMP_SPINCOUNT=1000"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWaitPolicy$", "-test.v")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, torchbin.WaitPolicyVar+"=") && !strings.HasPrefix(kv, torchbin.SpinCountVar+"=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(append(cmd.Env, "TORCHRT_PRINT_POLICY=1"), c.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", c.env, err, out)
		}
		if !strings.Contains(string(out), "policy="+c.want+"\n") {
			t.Errorf("started with %v: want policy=%s, got:\n%s", c.env, c.want, out)
		}
	}
}

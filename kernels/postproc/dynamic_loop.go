package postproc

import (
	"context"
	"fmt"

	"dragonx/kernels/ir"
	"dragonx/kernels/trace"
)

// disallowDynamicLoop is TVM's DisallowDynamicLoop
// (src/meta_schedule/postproc/disallow_dynamic_loop.cc).
type disallowDynamicLoop struct{}

// NewDisallowDynamicLoop returns TVM's DisallowDynamicLoop: it rejects a
// schedule with a loop whose extent is not a constant (compute-at can make
// one, range(rh_0 % 2 * 96 + 96)). It changes nothing and records nothing.
func NewDisallowDynamicLoop() Postproc { return disallowDynamicLoop{} }

func (disallowDynamicLoop) Name() string { return "DisallowDynamicLoop" }

func (disallowDynamicLoop) Apply(_ context.Context, s *trace.Session) error {
	var found *ir.For
	ir.WalkStmt(s.Func().Body, func(st ir.Stmt) bool {
		if found != nil {
			return false
		}
		if l, ok := st.(*ir.For); ok {
			if _, c := l.ConstExtent(); !c {
				found = l
				return false
			}
		}
		return true
	})
	if found != nil {
		return fmt.Errorf("loop %s has the dynamic extent %s", found.Var.Name(), ir.ExprString(found.SymbolicExtent()))
	}
	return nil
}

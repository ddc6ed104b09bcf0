package gpumodel

import (
	"slices"

	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
)

// laneEnv gives the variables' values for one lane of warp 0 at the
// loops' first iteration: threadIdx from the lane, every other variable
// (loops, blockIdx) 0, except the vector loop's.
type laneEnv struct {
	tx, ty, tz, vec *ir.Var
	x, y, z, v      int64
}

func (e *laneEnv) lookup(v *ir.Var) int64 {
	switch v {
	case nil:
		return 0
	case e.tx:
		return e.x
	case e.ty:
		return e.y
	case e.tz:
		return e.z
	case e.vec:
		return e.v
	}
	return 0
}

// eval evaluates an index expression with ir.EvalInt's semantics; ok is
// false where it cannot (a load in an index, division by zero).
func (e *laneEnv) eval(x ir.Expr) (int64, bool) {
	switch x := x.(type) {
	case *ir.IntImm:
		return x.Value(), true
	case *ir.Var:
		return e.lookup(x), true
	case *ir.Cast:
		return e.eval(x.A())
	case *ir.Binary:
		a, ok := e.eval(x.A())
		if !ok {
			return 0, false
		}
		b, ok := e.eval(x.B())
		if !ok {
			return 0, false
		}
		switch x.Op() {
		case ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpMin, ir.OpMax, ir.OpDiv, ir.OpMod, ir.OpFloorDiv, ir.OpFloorMod:
			return foldConst(x.Op(), a, b)
		}
	}
	// Comparisons, selects and the rest: the general evaluator.
	vars := collectVars(x, nil)
	env := make(map[*ir.Var]int64, len(vars))
	for _, v := range vars {
		env[v] = e.lookup(v)
	}
	return ir.EvalInt(x, env)
}

// setLane sets the thread indices of lane l of warp 0.
func (w *walker) setLane(e *laneEnv, l int64) {
	c := &w.coords[l]
	e.x, e.y, e.z = c[0], c[1], c[2]
}

// setCoords computes the thread indices of warp 0's lanes.
func (w *walker) setCoords() {
	bx, by := max(w.k.Block[0], 1), max(w.k.Block[1], 1)
	for l := range w.lanes {
		w.coords[l] = [3]int64{l % bx, (l / bx) % by, l / (bx * by)}
	}
}

func (w *walker) env(vv *ir.Var) laneEnv {
	return laneEnv{tx: w.k.ThreadIdx[0], ty: w.k.ThreadIdx[1], tz: w.k.ThreadIdx[2], vec: vv}
}

// laneTerm is a term of an index sum that depends on the lane.
type laneTerm struct {
	e   ir.Expr
	neg bool
}

// usesLane reports whether e uses a variable of the lane (threadIdx, the
// vector loop's).
func (e *laneEnv) usesLane(x ir.Expr) bool {
	switch x := x.(type) {
	case *ir.IntImm:
		return false
	case *ir.Var:
		return x == e.tx || x == e.ty || x == e.tz || (e.vec != nil && x == e.vec)
	case *ir.Binary:
		return e.usesLane(x.A()) || e.usesLane(x.B())
	case *ir.Cast:
		return e.usesLane(x.A())
	}
	return true
}

// prepare splits idx into the sum of its lane-independent terms (their
// value, evaluated once, returned) and the terms that depend on the lane,
// compiled into w.prog (see laneValue).
func (w *walker) prepare(e *laneEnv, idx ir.Expr) (int64, bool) {
	if w.pIdx == idx && w.pVec == e.vec {
		return w.pC, w.pOK // affine prepared it for laneAddrs
	}
	c, ok := w.prepare1(e, idx)
	w.pIdx, w.pVec, w.pC, w.pOK = idx, e.vec, c, ok
	return c, ok
}

func (w *walker) prepare1(e *laneEnv, idx ir.Expr) (int64, bool) {
	w.terms = w.terms[:0]
	c, ok := w.split(e, idx, false)
	if !ok {
		return 0, false
	}
	w.prog, w.interp = w.prog[:0], false
	for i, t := range w.terms {
		if !w.compile(e, t.e) {
			w.interp = true // a form compile does not take: walk the terms
			return c, true
		}
		if t.neg {
			w.prog = append(w.prog, instr{op: opNeg})
		}
		if i > 0 {
			w.prog = append(w.prog, instr{op: opBinary, bin: ir.OpAdd})
		}
	}
	return c, true
}

func (w *walker) split(e *laneEnv, x ir.Expr, neg bool) (int64, bool) {
	if b, ok := x.(*ir.Binary); ok && (b.Op() == ir.OpAdd || b.Op() == ir.OpSub) {
		a, ok1 := w.split(e, b.A(), neg)
		c, ok2 := w.split(e, b.B(), neg != (b.Op() == ir.OpSub))
		return a + c, ok1 && ok2
	}
	if e.usesLane(x) {
		w.terms = append(w.terms, laneTerm{x, neg})
		return 0, true
	}
	e.x, e.y, e.z, e.v = 0, 0, 0, 0
	v, ok := e.eval(x)
	if neg {
		v = -v
	}
	return v, ok
}

// instr is an instruction of a compiled lane term: a stack machine over
// the lane's four variables, cheaper than walking the expression 32 times.
type instr struct {
	op  uint8
	bin ir.BinOp
	v   int64 // the constant of opConst, the slot of opVar
}

const (
	opConst uint8 = iota
	opVar
	opBinary
	opNeg
)

// compile appends x's code to w.prog; false for an expression it does not
// compile (a comparison, a select: laneValue's caller falls back).
func (w *walker) compile(e *laneEnv, x ir.Expr) bool {
	switch x := x.(type) {
	case *ir.IntImm:
		w.prog = append(w.prog, instr{op: opConst, v: x.Value()})
	case *ir.Var:
		slot := int64(-1)
		switch x {
		case e.tx:
			slot = 0
		case e.ty:
			slot = 1
		case e.tz:
			slot = 2
		case e.vec:
			slot = 3
		}
		if slot < 0 {
			w.prog = append(w.prog, instr{op: opConst}) // loops and blockIdx at 0
		} else {
			w.prog = append(w.prog, instr{op: opVar, v: slot})
		}
	case *ir.Cast:
		return w.compile(e, x.A())
	case *ir.Binary:
		switch x.Op() {
		case ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpMin, ir.OpMax, ir.OpDiv, ir.OpMod, ir.OpFloorDiv, ir.OpFloorMod:
		default:
			return false
		}
		if !w.compile(e, x.A()) || !w.compile(e, x.B()) {
			return false
		}
		// Fold an operation on two constants (loops and blockIdx are 0).
		if n := len(w.prog); n >= 2 && w.prog[n-2].op == opConst && w.prog[n-1].op == opConst {
			if v, ok := foldConst(x.Op(), w.prog[n-2].v, w.prog[n-1].v); ok {
				w.prog = append(w.prog[:n-2], instr{op: opConst, v: v})
				return true
			}
		}
		w.prog = append(w.prog, instr{op: opBinary, bin: x.Op()})
	default:
		return false
	}
	return true
}

// foldConst applies an arithmetic integer operation (add, sub, mul, min,
// max, div, mod, floordiv, floormod: no other) to two values, with
// ir.EvalInt's semantics (false on a division by zero).
func foldConst(op ir.BinOp, a, b int64) (int64, bool) {
	switch op {
	case ir.OpAdd:
		return a + b, true
	case ir.OpSub:
		return a - b, true
	case ir.OpMul:
		return a * b, true
	case ir.OpMin:
		return min(a, b), true
	case ir.OpMax:
		return max(a, b), true
	}
	if b == 0 {
		return 0, false
	}
	q, m := a/b, a%b
	floor := m != 0 && (m < 0) != (b < 0)
	switch op {
	case ir.OpDiv:
		return q, true
	case ir.OpMod:
		return m, true
	case ir.OpFloorDiv:
		if floor {
			q--
		}
		return q, true
	}
	if floor {
		m += b
	}
	return m, true
}

// laneValue runs w.prog at e's lane and adds c.
func (w *walker) laneValue(e *laneEnv, c int64) (int64, bool) {
	if w.interp {
		for _, t := range w.terms {
			v, ok := e.eval(t.e)
			if !ok {
				return 0, false
			}
			if t.neg {
				v = -v
			}
			c += v
		}
		return c, true
	}
	if len(w.prog) == 0 {
		return c, true
	}
	vars := [4]int64{e.x, e.y, e.z, e.v}
	var stack [32]int64
	n := 0
	for _, in := range w.prog {
		switch in.op {
		case opConst:
			if n == len(stack) {
				return 0, false
			}
			stack[n] = in.v
			n++
		case opVar:
			if n == len(stack) {
				return 0, false
			}
			stack[n] = vars[in.v]
			n++
		case opNeg:
			stack[n-1] = -stack[n-1]
		case opBinary:
			a, b := stack[n-2], stack[n-1]
			n--
			var r int64
			switch in.bin {
			case ir.OpAdd:
				r = a + b
			case ir.OpSub:
				r = a - b
			case ir.OpMul:
				r = a * b
			case ir.OpMin:
				r = min(a, b)
			case ir.OpMax:
				r = max(a, b)
			default:
				if b == 0 {
					return 0, false
				}
				q, m := a/b, a%b
				floor := m != 0 && (m < 0) != (b < 0)
				switch in.bin {
				case ir.OpDiv:
					r = q
				case ir.OpMod:
					r = m
				case ir.OpFloorDiv:
					if floor {
						q--
					}
					r = q
				default:
					if floor {
						m += b
					}
					r = m
				}
			}
			stack[n-1] = r
		}
	}
	return c + stack[0], true
}

// runLanes runs w.prog for warp 0's lanes at once (the vector variable at
// 0), one instruction over all lanes at a time, and stores c + the value
// in w.addr; false on a division by zero.
func (w *walker) runLanes(c int64) bool {
	n := w.lanes
	if len(w.prog) == 0 {
		for l := range n {
			w.addr[l] = c
		}
		return true
	}
	sp := 0
	for _, in := range w.prog {
		switch in.op {
		case opConst, opVar:
			if sp == len(w.stack) {
				w.stack = append(w.stack, [32]int64{})
			}
			d := &w.stack[sp]
			sp++
			switch {
			case in.op == opConst:
				for l := range n {
					d[l] = in.v
				}
			case in.v == 3: // the vector variable, at its first element
				for l := range n {
					d[l] = 0
				}
			default:
				for l := range n {
					d[l] = w.coords[l][in.v]
				}
			}
		case opNeg:
			d := &w.stack[sp-1]
			for l := range n {
				d[l] = -d[l]
			}
		case opBinary:
			a, b := &w.stack[sp-2], &w.stack[sp-1]
			sp--
			switch in.bin {
			case ir.OpAdd:
				for l := range n {
					a[l] += b[l]
				}
			case ir.OpSub:
				for l := range n {
					a[l] -= b[l]
				}
			case ir.OpMul:
				for l := range n {
					a[l] *= b[l]
				}
			case ir.OpMin:
				for l := range n {
					a[l] = min(a[l], b[l])
				}
			case ir.OpMax:
				for l := range n {
					a[l] = max(a[l], b[l])
				}
			default:
				for l := range n {
					x, y := a[l], b[l]
					if y == 0 {
						return false
					}
					q, m := x/y, x%y
					floor := m != 0 && (m < 0) != (y < 0)
					switch in.bin {
					case ir.OpDiv:
						a[l] = q
					case ir.OpMod:
						a[l] = m
					case ir.OpFloorDiv:
						if floor {
							q--
						}
						a[l] = q
					default:
						if floor {
							m += y
						}
						a[l] = m
					}
				}
			}
		}
	}
	r := &w.stack[0]
	for l := range n {
		w.addr[l] = c + r[l]
	}
	return true
}

// laneAddrs fills w.addr with the element index of each lane's first
// vector element (w.lanes of them); ok is false when an index cannot be
// evaluated.
func (w *walker) laneAddrs(idx ir.Expr, vv *ir.Var) bool {
	e := w.env(vv)
	c, ok := w.prepare(&e, idx)
	if !ok {
		return false
	}
	if !w.interp {
		return w.runLanes(c)
	}
	for l := range w.lanes {
		w.setLane(&e, l)
		a := c
		for _, t := range w.terms {
			v, ok := e.eval(t.e)
			if !ok {
				return false
			}
			if t.neg {
				v = -v
			}
			a += v
		}
		w.addr[l] = a
	}
	return true
}

// affine reports whether the lanes' addresses are addr0 + lane·stride,
// from lanes 0, 1, 2 and the last (the common case, decided without
// evaluating every lane; laneAddrs and affineAddrs decide the rest).
func (w *walker) affine(idx ir.Expr, vv *ir.Var) (addr0, stride int64, ok bool) {
	if w.k.Block[0] < w.lanes {
		return 0, 0, false // the warp spans threadIdx.y: not affine in the lane
	}
	e := w.env(vv)
	c, ok := w.prepare(&e, idx)
	if !ok {
		return 0, 0, false
	}
	var a [4]int64
	for i, l := range [4]int64{0, 1, 2, w.lanes - 1} {
		if l >= w.lanes {
			l = w.lanes - 1
		}
		w.setLane(&e, l)
		v, ok := w.laneValue(&e, c)
		if !ok {
			return 0, 0, false
		}
		a[i] = v
	}
	s := a[1] - a[0]
	if a[3]-a[0] != s*(w.lanes-1) || (w.lanes > 2 && a[2]-a[1] != s) {
		return 0, 0, false
	}
	return a[0], s, true
}

// affineAddrs reports whether the lanes' addresses in w.addr are addr0 +
// lane·stride.
func (w *walker) affineAddrs() (addr0, stride int64, ok bool) {
	a0 := w.addr[0]
	if w.lanes == 1 {
		return a0, 0, true
	}
	s := w.addr[1] - a0
	for l := int64(2); l < w.lanes; l++ {
		if w.addr[l]-a0 != s*l {
			return 0, 0, false
		}
	}
	return a0, s, true
}

// sectors returns the 32-byte sectors a warp's access touches: elem-byte
// elements, ve consecutive ones per lane (a vector).
func (w *walker) sectors(idx ir.Expr, elem int64, vv *ir.Var, ve int64) int64 {
	span := ve * elem
	perLane := (span + 31) / 32
	a0, s, ok := w.affine(idx, vv)
	if !ok {
		if !w.laneAddrs(idx, vv) {
			return w.lanes * perLane // unknown: uncoalesced
		}
		a0, s, ok = w.affineAddrs()
	}
	if ok {
		switch {
		case s == 0:
			return sectorRange(a0*elem, span)
		case abs(s)*elem >= 32:
			return w.lanes * perLane
		default:
			lo := min(a0, a0+s*(w.lanes-1)) * elem
			return sectorRange(lo, (abs(s)*(w.lanes-1)+ve)*elem)
		}
	}
	var buf [64]int64
	ids := buf[:0]
	for l := range w.lanes {
		first := floorDiv(w.addr[l]*elem, 32)
		last := floorDiv(w.addr[l]*elem+span-1, 32)
		for s := first; s <= last && len(ids) < cap(buf); s++ {
			ids = append(ids, s)
		}
	}
	if !slices.IsSorted(ids) {
		slices.Sort(ids)
	}
	return int64(len(slices.Compact(ids)))
}

// sectorRange returns the sectors of n bytes from byte lo.
func sectorRange(lo, n int64) int64 {
	return floorDiv(lo+n-1, 32) - floorDiv(lo, 32) + 1
}

// wavefronts returns the shared-memory wavefronts of a warp's access (32
// banks of 4 bytes): the most distinct 4-byte words any bank serves (a
// word read by several lanes is a broadcast), at least one per 128 bytes
// the warp moves.
func (w *walker) wavefronts(idx ir.Expr, elem int64, vv *ir.Var, ve int64) int64 {
	span := ve * elem
	words := max(1, span/4)
	_, s, ok := w.affine(idx, vv)
	if !ok {
		if !w.laneAddrs(idx, vv) {
			return w.lanes // unknown: fully serialised
		}
		_, s, ok = w.affineAddrs()
	}
	if ok {
		switch {
		case s == 0:
			return max(1, (words*4+127)/128) // a broadcast
		case words == 1 && s*elem%4 != 0:
			return 1 // sub-word strides: lanes share words
		case words == 1:
			return gcd(abs(s*elem/4), 32)
		case s == ve:
			return max(1, (w.lanes*words*4+127)/128) // contiguous vectors
		}
	}
	// Distinct words per bank: a few per bank in practice, kept in a
	// small table (a bank beyond its slots is counted exactly by sorting).
	// A 64- or 128-bit access is served in 2 or 4 phases of 16 or 8 lanes
	// (half and quarter warps), each at least one wavefront, with the bank
	// conflicts counted within a phase.
	phase := w.lanes
	if words > 1 {
		phase = max(1, 32/words)
	}
	total := int64(0)
	for start := int64(0); start < w.lanes; start += phase {
		var slots [32][8]int64
		var count [32]int64
		distinct, worst := int64(0), int64(1)
		for l := start; l < min(start+phase, w.lanes); l++ {
			first := floorDiv(w.addr[l]*elem, 4)
			for i := range words {
				id := first + i
				b := id & 31
				if slices.Contains(slots[b][:min(count[b], 8)], id) {
					continue
				}
				if count[b] >= 8 {
					return w.wavefrontsSorted(elem, words)
				}
				slots[b][count[b]] = id
				count[b]++
				distinct++
				worst = max(worst, count[b])
			}
		}
		total += max(worst, (distinct*4+127)/128)
	}
	return total
}

// wavefrontsSorted counts the wavefronts of w.addr by sorting its words.
func (w *walker) wavefrontsSorted(elem, words int64) int64 {
	var buf [128]int64
	ids := buf[:0]
	for l := range w.lanes {
		first := floorDiv(w.addr[l]*elem, 4)
		for i := range words {
			if len(ids) < cap(buf) {
				ids = append(ids, first+i)
			}
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var banks [32]int64
	worst := int64(1)
	for _, id := range ids {
		b := id & 31
		banks[b]++
		worst = max(worst, banks[b])
	}
	return max(worst, (int64(len(ids))*4+127)/128)
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// exprOps counts the FP instructions, FLOPs and transcendental calls of a
// value expression (index arithmetic is not counted: integer work the
// compiler mostly hoists).
func exprOps(e ir.Expr) (instr, flops, sfu float64) {
	switch x := e.(type) {
	case *ir.Binary:
		i1, f1, s1 := exprOps(x.A())
		i2, f2, s2 := exprOps(x.B())
		instr, flops, sfu = i1+i2, f1+f2, s1+s2
		if x.DType().IsFloat() || x.A().DType().IsFloat() {
			instr++
			flops++
		}
	case *ir.Not:
		return exprOps(x.A())
	case *ir.Cast:
		instr, flops, sfu = exprOps(x.A())
		if x.DType() != x.A().DType() {
			instr++
		}
	case *ir.Select:
		i1, f1, s1 := exprOps(x.True())
		i2, f2, s2 := exprOps(x.False())
		i3, f3, s3 := exprOps(x.Cond())
		instr, flops, sfu = i1+i2+i3+1, f1+f2+f3, s1+s2+s3
	case *ir.Call:
		for _, a := range x.Args() {
			i, f, s := exprOps(a)
			instr, flops, sfu = instr+i, flops+f, sfu+s
		}
		switch x.Op() {
		case ir.CallIfThenElse, ir.CallFabs, ir.CallFloor, ir.CallCeil, ir.CallRound:
			instr++
			flops++
		default:
			sfu++
			flops++
		}
	}
	return instr, flops, sfu
}

// fma reports whether a store is x = x + a*b (or a*b + x) in floating
// point: one FFMA, not an FMUL and an FADD.
func fma(s *lower.Store) bool {
	b, ok := s.Value.(*ir.Binary)
	if !ok || b.Op() != ir.OpAdd || !b.DType().IsFloat() {
		return false
	}
	for _, m := range [2]ir.Expr{b.A(), b.B()} {
		if mb, ok := m.(*ir.Binary); ok && mb.Op() == ir.OpMul {
			return true
		}
	}
	return false
}

// ExprFLOPs is the FLOPs of one evaluation of a value expression, as the
// model counts them: one per floating-point operation and one per call
// (an FMA counts two, its multiply and its add; index arithmetic none).
func ExprFLOPs(e ir.Expr) float64 {
	_, flops, _ := exprOps(e)
	return flops
}

package ir

import (
	"fmt"
	"math"
)

// Expr is a scalar expression: an immediate, a variable, an operation, a
// call or a buffer load.
//
// Expressions are immutable: their fields are unexported and every
// constructor returns a fresh node. Statements (which are mutable) share
// expression trees freely, which is what makes Clone cheap; to change an
// expression, build a new one (see Substitute and Rewrite).
type Expr interface {
	// DType is the type of the value the expression computes.
	DType() DType
	isExpr()
}

// IntImm is an integer (or bool) constant.
type IntImm struct {
	v int64
	t DType
}

// FloatImm is a floating-point constant. The value is kept as written; a
// float32 constant is rounded when it is used (by the interpreter, by code
// generation), not when it is built.
type FloatImm struct {
	v float64
	t DType
}

// Var is a scalar variable: a loop variable, a block iter var, or a free
// symbol. A Var is identified by its pointer, never by its name: two
// distinct Vars may share a name (the printer renames one of them).
type Var struct {
	name string
	t    DType
}

// BinOp is the operator of a Binary expression.
type BinOp uint8

// The binary operators. Div and Mod truncate toward zero on integers (C
// semantics, TVM's truncdiv/truncmod) and Div is true division on floats;
// FloorDiv and FloorMod round toward negative infinity (Python's // and %,
// which is what TE's // and % produce).
const (
	OpAdd BinOp = iota
	OpSub
	OpMul
	OpDiv
	OpMod
	OpFloorDiv
	OpFloorMod
	OpMin
	OpMax
	OpEQ
	OpNE
	OpLT
	OpLE
	OpGT
	OpGE
	OpAnd
	OpOr
	numBinOps
)

var binOpNames = [numBinOps]string{
	OpAdd: "add", OpSub: "sub", OpMul: "mul", OpDiv: "div", OpMod: "mod",
	OpFloorDiv: "floordiv", OpFloorMod: "floormod", OpMin: "min", OpMax: "max",
	OpEQ: "eq", OpNE: "ne", OpLT: "lt", OpLE: "le", OpGT: "gt", OpGE: "ge",
	OpAnd: "and", OpOr: "or",
}

func (op BinOp) String() string {
	if op < numBinOps {
		return binOpNames[op]
	}
	return fmt.Sprintf("binop(%d)", uint8(op))
}

// IsCompare reports whether op is one of the six comparisons.
func (op BinOp) IsCompare() bool { return op >= OpEQ && op <= OpGE }

// IsLogical reports whether op is And or Or.
func (op BinOp) IsLogical() bool { return op == OpAnd || op == OpOr }

// Binary is an arithmetic, comparison or logical operation on two operands
// of the same dtype. Comparisons and logical operators produce bool.
type Binary struct {
	op   BinOp
	a, b Expr
	t    DType
}

// Not is logical negation of a bool expression.
type Not struct{ a Expr }

// Select evaluates both arms and picks one by Cond (TVM's T.Select). For a
// lazy choice, which must be used when an arm may be out of bounds (padding),
// use the if_then_else call built by IfElse.
type Select struct{ cond, t, f Expr }

// Cast converts a value to another dtype.
type Cast struct {
	t DType
	a Expr
}

// CallOp names an intrinsic called by a Call expression.
type CallOp uint8

// The intrinsics. CallIfThenElse is TVM's tir.if_then_else: only the chosen
// arm is evaluated. The math functions take and return the dtype of their
// first argument.
const (
	CallIfThenElse CallOp = iota
	CallExp
	CallLog
	CallSqrt
	CallRsqrt
	CallTanh
	CallSigmoid
	CallErf
	CallPow
	CallFabs
	CallFloor
	CallCeil
	CallRound
	CallSin
	CallCos
	numCallOps
)

var callOpNames = [numCallOps]string{
	CallIfThenElse: "if_then_else", CallExp: "exp", CallLog: "log", CallSqrt: "sqrt",
	CallRsqrt: "rsqrt", CallTanh: "tanh", CallSigmoid: "sigmoid", CallErf: "erf",
	CallPow: "pow", CallFabs: "fabs", CallFloor: "floor", CallCeil: "ceil",
	CallRound: "round", CallSin: "sin", CallCos: "cos",
}

var callOpArity = [numCallOps]int{CallIfThenElse: 3, CallPow: 2}

func (op CallOp) String() string {
	if op < numCallOps {
		return callOpNames[op]
	}
	return fmt.Sprintf("call(%d)", uint8(op))
}

// Arity is the number of arguments op takes.
func (op CallOp) Arity() int {
	if op < numCallOps && callOpArity[op] != 0 {
		return callOpArity[op]
	}
	return 1
}

// ParseCallOp returns the intrinsic named s ("exp", "if_then_else", ...).
func ParseCallOp(s string) (CallOp, bool) {
	for i, n := range callOpNames {
		if n == s {
			return CallOp(i), true
		}
	}
	return 0, false
}

// Call is a call to an intrinsic.
type Call struct {
	op   CallOp
	args []Expr
	t    DType
}

// BufferLoad reads one element of a buffer.
type BufferLoad struct {
	buf *Buffer
	idx []Expr
}

func (*IntImm) isExpr()     {}
func (*FloatImm) isExpr()   {}
func (*Var) isExpr()        {}
func (*Binary) isExpr()     {}
func (*Not) isExpr()        {}
func (*Select) isExpr()     {}
func (*Cast) isExpr()       {}
func (*Call) isExpr()       {}
func (*BufferLoad) isExpr() {}

// DType implementations.
func (e *IntImm) DType() DType     { return e.t }
func (e *FloatImm) DType() DType   { return e.t }
func (e *Var) DType() DType        { return e.t }
func (e *Binary) DType() DType     { return e.t }
func (e *Not) DType() DType        { return Bool }
func (e *Select) DType() DType     { return e.t.DType() }
func (e *Cast) DType() DType       { return e.t }
func (e *Call) DType() DType       { return e.t }
func (e *BufferLoad) DType() DType { return e.buf.dtype }

// Value returns the constant.
func (e *IntImm) Value() int64 { return e.v }

// Value returns the constant.
func (e *FloatImm) Value() float64 { return e.v }

// Name returns the variable's name hint.
func (v *Var) Name() string { return v.name }

// Op returns the operator.
func (e *Binary) Op() BinOp { return e.op }

// A returns the left operand.
func (e *Binary) A() Expr { return e.a }

// B returns the right operand.
func (e *Binary) B() Expr { return e.b }

// A returns the negated operand.
func (e *Not) A() Expr { return e.a }

// Cond returns the condition.
func (e *Select) Cond() Expr { return e.cond }

// True returns the value chosen when Cond holds.
func (e *Select) True() Expr { return e.t }

// False returns the value chosen otherwise.
func (e *Select) False() Expr { return e.f }

// A returns the converted operand.
func (e *Cast) A() Expr { return e.a }

// Op returns the intrinsic.
func (e *Call) Op() CallOp { return e.op }

// Args returns the arguments; the slice must not be modified.
func (e *Call) Args() []Expr { return e.args }

// Buffer returns the buffer read.
func (e *BufferLoad) Buffer() *Buffer { return e.buf }

// Indices returns one index per buffer dimension; the slice must not be
// modified.
func (e *BufferLoad) Indices() []Expr { return e.idx }

// ---- constructors ----

// NewVar returns a new variable. Loop variables and iter vars are Int32
// (Int64 when an extent does not fit in 32 bits), as TVM makes them.
func NewVar(name string, t DType) *Var { return &Var{name: name, t: t} }

// Int returns an int32 constant.
func Int(v int64) *IntImm { return IntImmOf(Int32, v) }

// Small int32 and int64 constants are preallocated and shared: the
// simplifier makes them by the hundred, and an IntImm is immutable, so
// sharing one is indistinguishable from making a new one.
const (
	smallIntMin = -64
	smallIntMax = 1024
)

var smallInts = func() (t [2][smallIntMax - smallIntMin + 1]IntImm) {
	for i := range t[0] {
		t[0][i] = IntImm{v: int64(i + smallIntMin), t: Int32}
		t[1][i] = IntImm{v: int64(i + smallIntMin), t: Int64}
	}
	return t
}()

// IntImmOf returns an integer or bool constant of dtype t. It panics if t is
// not an integer or bool type.
func IntImmOf(t DType, v int64) *IntImm {
	if v >= smallIntMin && v <= smallIntMax {
		switch t {
		case Int32:
			return &smallInts[0][v-smallIntMin]
		case Int64:
			return &smallInts[1][v-smallIntMin]
		}
	}
	if !t.IsInt() && !t.IsBool() {
		panic(fmt.Sprintf("kernels: IntImmOf(%s)", t))
	}
	if t.IsBool() && v != 0 {
		v = 1
	}
	return &IntImm{v: v, t: t}
}

// True and False return bool constants, shared as the small integers are.
func True() *IntImm  { return &boolImms[1] }
func False() *IntImm { return &boolImms[0] }

var boolImms = [2]IntImm{{v: 0, t: Bool}, {v: 1, t: Bool}}

// F32 returns a float32 constant.
func F32(v float64) *FloatImm { return &FloatImm{v: v, t: Float32} }

// FloatImmOf returns a floating-point constant of dtype t; it panics if t is
// not a float type.
func FloatImmOf(t DType, v float64) *FloatImm {
	if !t.IsFloat() {
		panic(fmt.Sprintf("kernels: FloatImmOf(%s)", t))
	}
	return &FloatImm{v: v, t: t}
}

// Const returns a constant of dtype t holding v (truncated for integers).
func Const(t DType, v float64) Expr {
	if t.IsFloat() {
		return FloatImmOf(t, v)
	}
	return IntImmOf(t, int64(v))
}

// MinValue and MaxValue return the smallest and largest finite values of t,
// the identities TVM uses for max and min reductions (for float32,
// ∓3.4028234663852886e+38).
func MinValue(t DType) Expr {
	switch t {
	case Float16:
		return FloatImmOf(t, -65504)
	case Float32:
		return FloatImmOf(t, -math.MaxFloat32)
	case Float64:
		return FloatImmOf(t, -math.MaxFloat64)
	case Int8:
		return IntImmOf(t, math.MinInt8)
	case Int32:
		return IntImmOf(t, math.MinInt32)
	case Int64:
		return IntImmOf(t, math.MinInt64)
	case UInt8, Bool:
		return IntImmOf(t, 0)
	}
	panic(fmt.Sprintf("kernels: MinValue(%s)", t))
}

// MaxValue: see MinValue.
func MaxValue(t DType) Expr {
	switch t {
	case Float16:
		return FloatImmOf(t, 65504)
	case Float32:
		return FloatImmOf(t, math.MaxFloat32)
	case Float64:
		return FloatImmOf(t, math.MaxFloat64)
	case Int8:
		return IntImmOf(t, math.MaxInt8)
	case Int32:
		return IntImmOf(t, math.MaxInt32)
	case Int64:
		return IntImmOf(t, math.MaxInt64)
	case UInt8:
		return IntImmOf(t, math.MaxUint8)
	case Bool:
		return IntImmOf(t, 1)
	}
	panic(fmt.Sprintf("kernels: MaxValue(%s)", t))
}

// unify brings the operands of a binary operation to one dtype, as TVM's
// Python frontend does: an integer constant next to a float operand becomes
// a float constant, and the narrower of two integer operands is cast to the
// wider. Any other mismatch is a programming error.
func unify(op string, a, b Expr) (Expr, Expr) {
	at, bt := a.DType(), b.DType()
	if at == bt {
		return a, b
	}
	if c, ok := a.(*IntImm); ok && bt.IsFloat() {
		return FloatImmOf(bt, float64(c.v)), b
	}
	if c, ok := b.(*IntImm); ok && at.IsFloat() {
		return a, FloatImmOf(at, float64(c.v))
	}
	if at.IsInt() && bt.IsInt() {
		if at.Bits() < bt.Bits() {
			return CastTo(bt, a), b
		}
		return a, CastTo(at, b)
	}
	panic(fmt.Sprintf("kernels: %s of %s and %s operands", op, at, bt))
}

// NewBinary builds a binary operation, unifying operand dtypes (see Add).
// It panics if the operands cannot be unified or a logical operator gets a
// non-bool operand.
func NewBinary(op BinOp, a, b Expr) *Binary {
	if op >= numBinOps {
		panic(fmt.Sprintf("kernels: NewBinary(%s)", op))
	}
	a, b = unify(op.String(), a, b)
	t := a.DType()
	switch {
	case op.IsLogical():
		if t != Bool {
			panic(fmt.Sprintf("kernels: %s of %s operands", op, t))
		}
	case op.IsCompare():
		t = Bool
	}
	return &Binary{op: op, a: a, b: b, t: t}
}

// Arithmetic constructors. Operands are unified as TVM's Python frontend
// does: an integer constant next to a float operand becomes a float
// constant, and the narrower of two integer operands is widened.
func Add(a, b Expr) Expr      { return NewBinary(OpAdd, a, b) }
func Sub(a, b Expr) Expr      { return NewBinary(OpSub, a, b) }
func Mul(a, b Expr) Expr      { return NewBinary(OpMul, a, b) }
func Div(a, b Expr) Expr      { return NewBinary(OpDiv, a, b) }
func Mod(a, b Expr) Expr      { return NewBinary(OpMod, a, b) }
func FloorDiv(a, b Expr) Expr { return NewBinary(OpFloorDiv, a, b) }
func FloorMod(a, b Expr) Expr { return NewBinary(OpFloorMod, a, b) }
func Min(a, b Expr) Expr      { return NewBinary(OpMin, a, b) }
func Max(a, b Expr) Expr      { return NewBinary(OpMax, a, b) }

// Comparison constructors; the result is bool.
func EQ(a, b Expr) Expr { return NewBinary(OpEQ, a, b) }
func NE(a, b Expr) Expr { return NewBinary(OpNE, a, b) }
func LT(a, b Expr) Expr { return NewBinary(OpLT, a, b) }
func LE(a, b Expr) Expr { return NewBinary(OpLE, a, b) }
func GT(a, b Expr) Expr { return NewBinary(OpGT, a, b) }
func GE(a, b Expr) Expr { return NewBinary(OpGE, a, b) }

// And and Or combine bool expressions; with several operands they fold to
// the left (a and b and c), as tvm.tir.all and tvm.tir.any do.
func And(a Expr, rest ...Expr) Expr {
	for _, b := range rest {
		a = NewBinary(OpAnd, a, b)
	}
	return a
}

// Or: see And.
func Or(a Expr, rest ...Expr) Expr {
	for _, b := range rest {
		a = NewBinary(OpOr, a, b)
	}
	return a
}

// NotOf negates a bool expression.
func NotOf(a Expr) Expr {
	if a.DType() != Bool {
		panic(fmt.Sprintf("kernels: not of %s operand", a.DType()))
	}
	return &Not{a: a}
}

// SelectOf builds an eager select (T.Select).
func SelectOf(cond, t, f Expr) Expr {
	if cond.DType() != Bool {
		panic(fmt.Sprintf("kernels: select condition of type %s", cond.DType()))
	}
	t, f = unify("select", t, f)
	return &Select{cond: cond, t: t, f: f}
}

// IfElse builds a lazy conditional (T.if_then_else): only the chosen arm is
// evaluated, so an arm may contain an access that is out of bounds when the
// condition does not select it (padding).
func IfElse(cond, t, f Expr) Expr {
	if cond.DType() != Bool {
		panic(fmt.Sprintf("kernels: if_then_else condition of type %s", cond.DType()))
	}
	t, f = unify("if_then_else", t, f)
	return &Call{op: CallIfThenElse, args: []Expr{cond, t, f}, t: t.DType()}
}

// CastTo converts a to dtype t; it returns a itself when it already has
// type t, and folds constants.
func CastTo(t DType, a Expr) Expr {
	if a.DType() == t {
		return a
	}
	switch c := a.(type) {
	case *IntImm:
		if t.IsFloat() {
			return FloatImmOf(t, float64(c.v))
		}
		return IntImmOf(t, c.v)
	case *FloatImm:
		if t.IsInt() || t.IsBool() {
			return IntImmOf(t, int64(c.v))
		}
		return FloatImmOf(t, c.v)
	}
	return &Cast{t: t, a: a}
}

// NewCall builds a call to an intrinsic. Arguments of two-argument math
// functions are unified; the result has the dtype of the (first) value
// argument. It panics on a wrong number of arguments.
func NewCall(op CallOp, args ...Expr) Expr {
	if op >= numCallOps || len(args) != op.Arity() {
		panic(fmt.Sprintf("kernels: %s called with %d arguments", op, len(args)))
	}
	if op == CallIfThenElse {
		return IfElse(args[0], args[1], args[2])
	}
	if len(args) == 2 {
		a, b := unify(op.String(), args[0], args[1])
		args = []Expr{a, b}
	} else {
		args = append([]Expr(nil), args...)
	}
	return &Call{op: op, args: args, t: args[0].DType()}
}

// Math intrinsics.
func Exp(a Expr) Expr     { return NewCall(CallExp, a) }
func Log(a Expr) Expr     { return NewCall(CallLog, a) }
func Sqrt(a Expr) Expr    { return NewCall(CallSqrt, a) }
func Rsqrt(a Expr) Expr   { return NewCall(CallRsqrt, a) }
func Tanh(a Expr) Expr    { return NewCall(CallTanh, a) }
func Sigmoid(a Expr) Expr { return NewCall(CallSigmoid, a) }
func Erf(a Expr) Expr     { return NewCall(CallErf, a) }
func Pow(a, b Expr) Expr  { return NewCall(CallPow, a, b) }
func Fabs(a Expr) Expr    { return NewCall(CallFabs, a) }

// Load reads buf at the given indices. It panics if the number of indices
// is not the buffer's rank or an index is not an integer.
func Load(buf *Buffer, idx ...Expr) *BufferLoad {
	checkIndices("load", buf, idx)
	return &BufferLoad{buf: buf, idx: append([]Expr(nil), idx...)}
}

func checkIndices(what string, buf *Buffer, idx []Expr) {
	if len(idx) != len(buf.shape) {
		panic(fmt.Sprintf("kernels: %s of %d-d buffer %s with %d indices", what, len(buf.shape), buf.name, len(idx)))
	}
	for _, e := range idx {
		if !e.DType().IsInt() {
			panic(fmt.Sprintf("kernels: %s of buffer %s with %s index", what, buf.name, e.DType()))
		}
	}
}

// Vars returns the variables given, as expressions: handy for indexing a
// buffer with loop or iter vars.
func Vars(vs ...*Var) []Expr {
	out := make([]Expr, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// IsConstInt reports whether e is an integer constant, and its value.
func IsConstInt(e Expr) (int64, bool) {
	if c, ok := e.(*IntImm); ok && c.t != Bool {
		return c.v, true
	}
	return 0, false
}

// IsTrue reports whether e is nil or the bool constant true (nil stands for
// "no predicate" in a BlockRealize).
func IsTrue(e Expr) bool {
	if e == nil {
		return true
	}
	c, ok := e.(*IntImm)
	return ok && c.t == Bool && c.v != 0
}

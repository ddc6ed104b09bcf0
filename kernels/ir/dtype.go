package ir

import "fmt"

// DType is the element type of a scalar expression or a buffer. The set is
// TVM's scalar dtypes that dragonx's kernels use; vector lanes are not
// represented (vectorization is a loop kind, as in TensorIR before lowering).
type DType uint8

// The dtypes. The zero value is Invalid so that a forgotten dtype is caught.
const (
	Invalid DType = iota
	Bool
	Int8
	Int32
	Int64
	UInt8
	Float16
	Float32
	Float64
)

var dtypeNames = [...]string{
	Invalid: "invalid",
	Bool:    "bool",
	Int8:    "int8",
	Int32:   "int32",
	Int64:   "int64",
	UInt8:   "uint8",
	Float16: "float16",
	Float32: "float32",
	Float64: "float64",
}

// String returns TVM's name for t ("float32", "int32", ...).
func (t DType) String() string {
	if int(t) < len(dtypeNames) {
		return dtypeNames[t]
	}
	return fmt.Sprintf("dtype(%d)", uint8(t))
}

// ParseDType parses TVM's dtype names ("float32", "int64", "bool", ...).
func ParseDType(s string) (DType, error) {
	for i, n := range dtypeNames {
		if i != int(Invalid) && n == s {
			return DType(i), nil
		}
	}
	return Invalid, fmt.Errorf("kernels: unknown dtype %q", s)
}

// IsInt reports whether t is a signed or unsigned integer type (not bool).
func (t DType) IsInt() bool { return t == Int8 || t == Int32 || t == Int64 || t == UInt8 }

// IsFloat reports whether t is a floating-point type.
func (t DType) IsFloat() bool { return t == Float16 || t == Float32 || t == Float64 }

// IsBool reports whether t is bool.
func (t DType) IsBool() bool { return t == Bool }

// Bits is the width of t in bits (bool counts as 8, as TVM stores it).
func (t DType) Bits() int {
	switch t {
	case Bool, Int8, UInt8:
		return 8
	case Float16:
		return 16
	case Int32, Float32:
		return 32
	case Int64, Float64:
		return 64
	}
	return 0
}

// Bytes is the storage size of one element of t.
func (t DType) Bytes() int { return t.Bits() / 8 }

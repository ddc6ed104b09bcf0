package ir

import (
	"slices"
	"strings"
)

// AnnValue is the value of an annotation: AnnInt, AnnFloat, AnnString,
// AnnBool or AnnArray (nested freely). Values are immutable.
type AnnValue interface{ annValue() }

// Annotation values.
type (
	AnnInt    int64
	AnnFloat  float64
	AnnString string
	AnnBool   bool
	AnnArray  []AnnValue
)

func (AnnInt) annValue()    {}
func (AnnFloat) annValue()  {}
func (AnnString) annValue() {}
func (AnnBool) annValue()   {}
func (AnnArray) annValue()  {}

// Annotation is one key/value pair.
type Annotation struct {
	Key   string
	Value AnnValue
}

// Annotations is a set of annotations kept sorted by key, so that printing,
// hashing and comparing never depend on insertion order. The zero value is
// empty. Use Set and Delete to change it; they keep the order.
type Annotations []Annotation

func (a Annotations) search(key string) (int, bool) {
	return slices.BinarySearchFunc(a, key, func(x Annotation, k string) int { return strings.Compare(x.Key, k) })
}

// Get returns the value stored under key.
func (a Annotations) Get(key string) (AnnValue, bool) {
	if i, ok := a.search(key); ok {
		return a[i].Value, true
	}
	return nil, false
}

// Int returns the value under key if it is an AnnInt (or AnnBool, as 0/1).
func (a Annotations) Int(key string) (int64, bool) {
	v, _ := a.Get(key)
	switch v := v.(type) {
	case AnnInt:
		return int64(v), true
	case AnnBool:
		if v {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// Set stores v under key, replacing any previous value.
func (a *Annotations) Set(key string, v AnnValue) {
	i, ok := a.search(key)
	if ok {
		(*a)[i].Value = v
		return
	}
	*a = slices.Insert(*a, i, Annotation{Key: key, Value: v})
}

// Delete removes key and reports whether it was present.
func (a *Annotations) Delete(key string) bool {
	i, ok := a.search(key)
	if ok {
		*a = slices.Delete(*a, i, i+1)
	}
	return ok
}

// Clone returns a copy that can be changed independently (values are
// immutable and shared).
func (a Annotations) Clone() Annotations {
	if len(a) == 0 {
		return nil
	}
	return slices.Clone(a)
}

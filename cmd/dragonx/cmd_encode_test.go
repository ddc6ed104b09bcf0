package main

import (
	"dragonx/dragon"
	"dragonx/kernels/vocab"
)

// The vocabulary of kernels/vocab is a dragon.Tokenizer, without either
// package importing the other.
var _ dragon.Tokenizer = (*vocab.Vocab)(nil)

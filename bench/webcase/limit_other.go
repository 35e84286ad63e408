//go:build !unix

package webcase

func raiseFileLimit() uint64 { return 1 << 20 }

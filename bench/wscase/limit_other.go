//go:build !unix

package wscase

func raiseFileLimit() uint64 { return 1 << 20 }

package wsclient

import "crypto/sha1"

func sha1sum(b []byte) [20]byte { return sha1.Sum(b) }

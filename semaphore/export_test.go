package semaphore

// Waiting returns the number of requests in s's queue.
func Waiting(s *Semaphore) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for w := s.head; w != nil; w = w.next {
		n++
	}
	return n
}

// Spare returns the number of waiter nodes s keeps for reuse. It reads
// loop-owned state: call it on the loop, or once the loop is idle.
func Spare(s *Semaphore) int { return s.nspare }

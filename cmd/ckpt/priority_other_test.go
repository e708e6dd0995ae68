//go:build !unix

package main

// lowPriority does nothing where there is no nice.
func lowPriority(int) {}

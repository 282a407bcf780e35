//go:build !unix

package main

// privateUmask does nothing where there is no umask: on Windows a file
// takes its folder's access list, and the user's profile is private.
func privateUmask() {}

package cli

import "golang.org/x/sys/unix"

// KeepOwnerAccess gives the owner back what the process's umask took from it, keeping what it
// takes from group and others: every file and directory volctl makes (the state dir, its
// database and lock files, the lock dir, staging and publish paths, a plugin's volumes) is made
// with the owner's access meant, and a umask of 0777 or 0377 would make them unusable by
// their own user at the next command, under any umask, until chmod-ed by hand (root, whom no
// permission bit binds, would not notice). main calls it before anything is made.
func KeepOwnerAccess() {
	if u := unix.Umask(0); u&0o700 != 0 {
		unix.Umask(u &^ 0o700)
	} else {
		unix.Umask(u)
	}
}

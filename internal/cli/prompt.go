package cli

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
)

// confirm asks a yes/no question on the terminal before a destructive action. With yes set it
// does not ask; off a terminal it refuses (exit 2) and says to pass --yes; "no" exits 3.
func (f *Factory) confirm(yes bool, action string) error {
	if yes {
		return nil
	}
	if !f.IO.CanPrompt() {
		return usageError("%s: not on a terminal, pass --yes to confirm", action)
	}
	fmt.Fprintf(f.IO.ErrOut, "%s? [y/N] ", action)
	line, err := bufio.NewReader(f.IO.In).ReadString('\n')
	if err != nil && line == "" {
		return withCode(ExitDeclined, errors.New("declined: no answer"))
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return withCode(ExitDeclined, fmt.Errorf("declined: %s", action))
}

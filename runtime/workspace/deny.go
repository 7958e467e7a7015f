package workspace

import (
	"path/filepath"
	"regexp"
	"strings"
)

// deniedCommands get an early, friendly refusal. This is not the
// boundary (Landlock and the namespaces are): it saves a model a
// confusing failure for commands that cannot work here anyway.
var deniedCommands = map[string]string{
	"sudo":     "commands run without privileges here; run it without sudo",
	"su":       "commands run without privileges here; switching users is not possible",
	"doas":     "commands run without privileges here; run it without doas",
	"shutdown": "the workspace cannot stop the machine", "reboot": "the workspace cannot restart the machine",
	"halt": "the workspace cannot stop the machine", "poweroff": "the workspace cannot stop the machine",
	"mkfs": "formatting file systems is not allowed", "fdisk": "partitioning disks is not allowed",
	"mount": "mounting file systems is not allowed", "umount": "unmounting file systems is not allowed",
}

// segmentRE splits a command line where a new command can start.
var segmentRE = regexp.MustCompile(`\|\||&&|[;&|\n(]|\$\(|` + "`")

// denied returns why command is refused, or "". Only plausible command
// positions are checked; quoted subcommands (bash -c "sudo …") are not.
func denied(command string) string {
	for _, seg := range segmentRE.Split(command, -1) {
		words := strings.Fields(seg)
		for len(words) > 0 && (strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "=") ||
			words[0] == "time" || words[0] == "nohup" || words[0] == "exec" || words[0] == "env" || words[0] == "nice" || words[0] == "command") {
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		name := filepath.Base(words[0])
		if strings.HasPrefix(name, "mkfs.") {
			name = "mkfs"
		}
		if why, ok := deniedCommands[name]; ok {
			return "`" + name + "`: " + why
		}
		if name == "dd" {
			for _, w := range words[1:] {
				if strings.HasPrefix(w, "of=/dev/") && w != "of=/dev/null" {
					return "`dd` to a device: writing to devices is not allowed"
				}
			}
		}
	}
	return ""
}

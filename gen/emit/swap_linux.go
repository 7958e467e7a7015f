package emit

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// swap exchanges tmp and outDir in one step (renameat2 RENAME_EXCHANGE),
// so outDir is never missing; tmp then holds the previous tree. File
// systems without the flag get the two-rename swap.
func swap(outDir, tmp, old string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, outDir, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return swapTwoRenames(outDir, tmp, old)
	}
	if err != nil {
		return fmt.Errorf("emit: swap %s into %s: %w", tmp, outDir, err)
	}
	return nil
}

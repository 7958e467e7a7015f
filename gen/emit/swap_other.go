//go:build !linux

package emit

// swap moves outDir away and tmp in, two renames.
func swap(outDir, tmp, old string) error { return swapTwoRenames(outDir, tmp, old) }

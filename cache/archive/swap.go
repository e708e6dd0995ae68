package archive

import (
	"fmt"
	"os"
)

// swapRenames moves the folder at dir aside (to stage + ".old"), then
// stage to dir; when the second rename fails the first is undone. It
// returns where the old folder is now.
func swapRenames(stage, dir string) (string, error) {
	old := stage + ".old"
	if err := os.Rename(dir, old); err != nil {
		return "", err
	}
	if err := os.Rename(stage, dir); err != nil {
		if rerr := os.Rename(old, dir); rerr != nil {
			return "", fmt.Errorf("%w; moving the old folder back from %s also failed: %v", err, old, rerr)
		}
		return "", err
	}
	return old, nil
}

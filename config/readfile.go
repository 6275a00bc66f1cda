package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxFileBytes is the largest config file mcpmux reads: a tool file,
// mcpmux.yaml or a token file. Real ones have a few kilobytes.
const MaxFileBytes = 1 << 20

// ReadFile reads a config file: a regular file, or a symlink to one, of at
// most MaxFileBytes. Anything else is an error naming what it is, without
// reading it: a FIFO would block the load (and with it every later hot
// reload) until something writes to it, and a symlink to /dev/zero would
// be read until memory runs out.
//
// The file is checked before it is opened and again, on the open file,
// after: it is opened without blocking, so that a FIFO swapped in between
// cannot hang the open either. Errors are *fs.PathError, as os.ReadFile's.
func ReadFile(path string) ([]byte, error) {
	fail := func(err error) ([]byte, error) { return nil, &fs.PathError{Op: "read", Path: path, Err: err} }
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkConfigFile(info); err != nil {
		return fail(err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := checkConfigFile(info); err != nil {
		return fail(err)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return fail(errTooLarge)
	}
	return data, nil
}

var errTooLarge = fmt.Errorf("larger than %v, the most a config file may have", Size(MaxFileBytes))

// checkConfigFile refuses what is not a regular file, or too large.
func checkConfigFile(info fs.FileInfo) error {
	if m := info.Mode(); !m.IsRegular() {
		return fmt.Errorf("not a regular file but %s: config files must be regular files (or symlinks to them)", fileKind(m))
	}
	if info.Size() > MaxFileBytes {
		return fmt.Errorf("%v: %w", Size(info.Size()), errTooLarge)
	}
	return nil
}

// fileKind names a mode that is not a regular file's.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// pathErr is the reason of a file error without the path, which the
// FileError around it names already.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Command lambdazip packs a Lambda bootstrap binary into a zip with the executable bit
// set, so make build needs no zip tool on the machine. The zip holds no timestamp (the
// entry's modification time is left zero), so the same binary always gives the same bytes
// and Terraform's source_code_hash changes only with the code.
//
//	go run ./internal/lambdazip OUT.zip BOOTSTRAP
package main

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: lambdazip OUT.zip BOOTSTRAP")
		os.Exit(2)
	}
	if err := pack(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "lambdazip:", err)
		os.Exit(1)
	}
}

func pack(out, bin string) error {
	src, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer src.Close()
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		f.Close()
		return err
	}
	if _, err := io.Copy(w, src); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Write a file, edit it with two exact find/replace edits, read it back, and show that a failing edit changes nothing.
package main

import (
	"context"
	"errors"
	"fmt"

	"cap/fs"
)

func main() {
	ctx := context.Background()
	const path = "notes/greeting.txt"

	w, err := fs.Write(ctx, path, []byte("Hello, world.\nSee you soon.\n"))
	if err != nil {
		fmt.Println("write:", err)
		return
	}
	fmt.Printf("wrote %s: %d bytes (created: %t)\n", w.Path, w.Bytes, w.Created)

	e, err := fs.Edit(ctx, path,
		fs.Replacement{Find: "world", Replace: "workspace"},
		fs.Replacement{Find: "See you soon.", Replace: "Bye."},
	)
	if err != nil {
		fmt.Println("edit:", err)
		return
	}
	fmt.Printf("edited %s: %d replacements\n", e.Path, e.Replaced)

	// "world" is gone now, so this edit fails and the file is untouched.
	_, err = fs.Edit(ctx, path, fs.Replacement{Find: "Bye.", Replace: "Ciao."}, fs.Replacement{Find: "world", Replace: "x"})
	var fe *fs.Error
	if errors.As(err, &fe) {
		fmt.Printf("second edit refused (%s), nothing written\n", fe.Code)
	}

	f, err := fs.Read(ctx, path)
	if err != nil {
		fmt.Println("read:", err)
		return
	}
	fmt.Print(f.Text())
}

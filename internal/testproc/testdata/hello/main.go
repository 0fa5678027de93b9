// Command hello is the main package the tests of Binary build.
package main

import "fmt"

func main() { fmt.Println("hello") }

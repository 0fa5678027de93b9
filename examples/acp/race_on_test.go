//go:build race

package main

// raceBuild builds the agent under test with the race detector too.
const raceBuild = true

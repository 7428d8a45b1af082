//go:build !linux

package broker

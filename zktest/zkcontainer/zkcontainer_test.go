package zkcontainer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zoocurator/zoocurator/zktest"
	"github.com/zoocurator/zoocurator/zktest/zkcontainer"
)

// TestStartAnswers starts a container and checks that the server answers a request. It
// skips only when no Docker engine answers here.
func TestStartAnswers(t *testing.T) {
	connect, stop, err := zkcontainer.Start()
	if errors.Is(err, zktest.ErrUnavailable) {
		t.Skipf("no Docker engine: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := zktest.Children(ctx, connect, "/"); err != nil {
		t.Fatalf("server in the container at %s: %v", connect, err)
	}
}

package otelzk_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/otelzk"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

func Example() {
	srv, err := zktest.StartServer() // or your ensemble's connect string
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Your program's meter provider (otel.GetMeterProvider()); here one read by hand.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	metrics, err := otelzk.New(mp)
	if err != nil {
		log.Fatal(err)
	}
	defer metrics.Close()
	client, err := framework.Connect(ctx, srv.ConnectString(), metrics.Options()...)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	m, err := mutex.New(client, "/locks/orders")
	if err != nil {
		log.Fatal(err)
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		log.Fatal(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && strings.HasPrefix(m.Name, "zookeeper.lock.") {
				for _, dp := range h.DataPoints {
					recipe, _ := dp.Attributes.Value("zookeeper.recipe")
					fmt.Printf("%s %s: %d\n", m.Name, recipe.AsString(), dp.Count)
				}
			}
		}
	}
	// Unordered output:
	// zookeeper.lock.wait.duration mutex: 1
	// zookeeper.lock.hold.duration mutex: 1
}

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKindOfNamesRecipeByChildren(t *testing.T) {
	for _, tc := range []struct {
		kids []string
		want recipeKind
	}{
		{nil, notARecipe},
		{[]string{"config", "state"}, notARecipe},
		{[]string{"_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007"}, lockKind},
		{[]string{"_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-latch-0000000001"}, latchKind},
		{[]string{"_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-__WRIT__0000000001"}, rwLockKind},
		{[]string{"_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-__READ__0000000002"}, rwLockKind},
		{[]string{"leases", "locks"}, semaphoreKind},
		{[]string{"locks"}, semaphoreKind}, // until pathKind reads it
		{[]string{"locks", "config"}, notARecipe},
		{[]string{"leases", "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007"}, lockKind},
		{[]string{"queue-0000000000", "queue-0000000001"}, queueKind},
		{[]string{"qn-0000000000"}, simpleQueueKind},
	} {
		assert.Equal(t, tc.want, kindOf(tc.kids), "%v", tc.kids)
	}
}

func TestIsSemaphoreReadsLeasesAndLocks(t *testing.T) {
	const lease = "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lease-0000000003"
	const lock = "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000001"
	for _, tc := range []struct {
		name                string
		leases, locks       []string
		hasLeases, hasLocks bool
		want                bool
	}{
		{"a lease held", []string{lease}, nil, true, false, true},
		{"a lease held, an acquirer queued", []string{lease}, []string{lock}, true, true, true},
		{"free, both containers still there", nil, nil, true, true, true},
		{"a mutex at <path>/locks", nil, []string{lock}, false, true, false},
		{"a plain child named locks", nil, nil, false, true, false},
		{"a plain child named leases", nil, nil, true, false, false},
		{"leases holding plain nodes", []string{"config"}, nil, true, true, false},
		{"leases holding unprotected lease names", []string{"lease-0000000003"}, nil, true, false, false},
		{"locks holding plain nodes", []string{lease}, []string{"orders"}, true, true, false},
	} {
		assert.Equal(t, tc.want, isSemaphore(tc.leases, tc.locks, tc.hasLeases, tc.hasLocks), tc.name)
	}
}

func TestRoleOfChecksSemaphoreNodes(t *testing.T) {
	const lease = "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lease-0000000003"
	const lock = "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000001"
	sem := func(p string) bool { return p == "/sem" }
	assert.Equal(t, "semaphore lease", roleOf("/sem/leases/"+lease, nil, sem))
	assert.Equal(t, "semaphore lock node", roleOf("/sem/locks/"+lock, nil, sem))
	assert.Equal(t, "lock node", roleOf("/app/locks/"+lock, nil, sem), "a mutex at a path named locks")
	assert.Equal(t, "", roleOf("/app/leases/"+lease, nil, sem))
	assert.Equal(t, "lock node", roleOf("/app/"+lock, nil, sem))
}

func TestNodeRoleNamesRecipeNode(t *testing.T) {
	const uuid = "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-"
	instance := []byte(`{"name":"orders","id":"o1","address":"10.0.0.7","port":8080,"sslPort":null,"payload":null,` +
		`"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":null}`)
	for _, tc := range []struct {
		parent, name string
		data         []byte
		want         string
	}{
		{"orders", uuid + "lock-0000000007", nil, "lock node"},
		{"election", uuid + "latch-0000000001", nil, "leader latch node"},
		{"leases", uuid + "lease-0000000003", nil, "semaphore lease"},
		{"locks", uuid + "lock-0000000003", nil, "semaphore lock node"},
		{"rw", uuid + "__WRIT__0000000001", nil, "read-write lock node (writer)"},
		{"jobs", "queue-0000000000", nil, "queue item"},
		{"jobs", "qn-0000000000", nil, "simple queue item"},
		{"orders", "o1", instance, "service instance of orders"},
		{"orders", "o2", instance, ""}, // the JSON names another id: not this node's instance
		{"config", "app", []byte(`{"name":"x"}`), ""},
		{"config", "app", []byte("plain"), ""},
	} {
		assert.Equal(t, tc.want, nodeRole(tc.parent, tc.name, tc.data), "%s/%s", tc.parent, tc.name)
	}
}

func TestOrderChildrenBySequence(t *testing.T) {
	kids := []string{"_c_ffff-lock-0000000002", "_c_0000-lock-0000000010", "_c_aaaa-lock-0000000001"}
	orderChildren("orders", kids)
	assert.Equal(t, []string{"_c_aaaa-lock-0000000001", "_c_ffff-lock-0000000002", "_c_0000-lock-0000000010"}, kids)

	leases := []string{"_c_b-lease-0000000005", "_c_a-lease-0000000006", "_c_c-lease-0000000004"}
	orderChildren("leases", leases)
	assert.Equal(t, []string{"_c_c-lease-0000000004", "_c_b-lease-0000000005", "_c_a-lease-0000000006"}, leases)

	rw := []string{"_c_b-__READ__0000000002", "_c_a-__WRIT__0000000003", "_c_c-__WRIT__0000000001"}
	orderChildren("rw", rw)
	assert.Equal(t, []string{"_c_c-__WRIT__0000000001", "_c_b-__READ__0000000002", "_c_a-__WRIT__0000000003"}, rw)

	plain := []string{"b", "a", "queue-0000000001"}
	orderChildren("x", plain)
	assert.Equal(t, []string{"a", "b", "queue-0000000001"}, plain)
}

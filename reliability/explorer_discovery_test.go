package reliability_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
)

// Discovery operations: a registration (register, update, unregister) and a provider
// that follows the instances another client registers and unregisters.

// xFresh bounds how long a provider may hand out an instance the server no longer has:
// the documented 5/3 of the session timeout, with slack for a loaded machine.
const xFresh = 5 * time.Second

type xpayload struct {
	N int `json:"n"`
}

func registerOp() xop {
	return xop{name: "discovery-register", setup: func(ctx context.Context, r *xrun) (*xround, error) {
		sd, err := discovery.New[xpayload](r.w.victim, r.w.base+"/services")
		if err != nil {
			return nil, err
		}
		inst, err := discovery.NewInstance("svc", xpayload{1}, discovery.WithID("victim-1"), discovery.WithAddress("10.0.0.1"), discovery.WithPort(80))
		if err != nil {
			return nil, err
		}
		node := r.w.base + "/services/svc/victim-1"
		closeOnce := onceErr(sd.Close)
		return &xround{
			call: func(ctx context.Context) error {
				if err := sd.Register(ctx, inst); err != nil {
					return err
				}
				inst.Payload = xpayload{2}
				return sd.Update(ctx, inst)
			},
			after: func(ctx context.Context, err error) []string {
				if err != nil || r.closedEarly.Load() {
					return nil
				}
				// Registered: the instance is (again) on the server, with the update.
				var got string
				if waitFor(ctx, xLoss, func() bool {
					b, st, err := r.w.adv.GetData(ctx, node)
					if err != nil {
						got = err.Error()
						return false
					}
					in, err := discovery.Unmarshal[xpayload](b)
					got = fmt.Sprintf("%s (owner 0x%x)", b, st.EphemeralOwner)
					return err == nil && in.Payload.N == 2 && st.EphemeralOwner == r.w.victim.SessionID()
				}) {
					return nil
				}
				return []string{fmt.Sprintf("honest: Register and Update returned nil, the instance's node is not the victim's with the update %v later: %s", xLoss, got)}
			},
			undo: func(ctx context.Context) error {
				if err := sd.Unregister(ctx, inst); err != nil {
					return err
				}
				return closeOnce()
			},
			close: closeOnce,
		}, nil
	}}
}

func providerOp() xop {
	return xop{name: "discovery-provider", listeners: true, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		base := r.w.base + "/services"
		instance := func(id, address string) ([]byte, error) {
			inst, err := discovery.NewInstance("svc", xpayload{1}, discovery.WithID(id), discovery.WithAddress(address), discovery.WithPort(80))
			if err != nil {
				return nil, err
			}
			return inst.Marshal()
		}
		reg := func(id string) error {
			b, err := instance(id, "10.0.0.2")
			if err != nil {
				return err
			}
			_, err = r.advCreate(r.bg, base+"/svc/"+id, b, framework.WithParents(), framework.WithMode(framework.Ephemeral))
			return err
		}
		for _, id := range []string{"a", "b"} {
			if err := reg(id); err != nil {
				return nil, err
			}
		}
		sd, err := discovery.New[xpayload](r.w.victim, base)
		if err != nil {
			return nil, err
		}
		p, err := discovery.NewProvider(sd, "svc")
		if err != nil {
			return nil, err
		}
		var closed atomic.Bool
		var toldAfterClose atomic.Int32
		p.Cache().AddListener(func(discovery.CacheEvent) { r.listenerHook() })
		p.Cache().AddListener(func(ev discovery.CacheEvent) { // a second listener: never told after Close
			if closed.Load() {
				toldAfterClose.Add(1)
			}
		})
		closeOnce := onceErr(func() error {
			err := p.Close()
			closed.Store(true)
			_ = err
			return sd.Close()
		})
		return &xround{
			call: func(ctx context.Context) error {
				if err := p.Start(ctx); err != nil {
					return err
				}
				// Another client changes the registry while the provider follows it.
				r.forgetAdv(base + "/svc/b")
				_ = r.w.adv.Delete(r.bg, base+"/svc/b")
				return reg("c")
			},
			final: func(ctx context.Context) []string {
				if n := toldAfterClose.Load(); n > 0 {
					return []string{fmt.Sprintf("listeners: a listener was told %d times after the provider's Close returned", n)}
				}
				return nil
			},
			after: func(ctx context.Context, err error) []string {
				if err != nil || r.closedEarly.Load() {
					return nil
				}
				var want, got []string
				if waitFor(ctx, xFresh, func() bool {
					want, err = readableInstances(ctx, r, base+"/svc")
					if err != nil {
						return false
					}
					got = got[:0]
					all, err := p.GetAllInstances()
					if err != nil {
						return false
					}
					for _, in := range all {
						got = append(got, in.ID+"@"+in.Address)
					}
					sort.Strings(got)
					return slices.Equal(want, got)
				}) {
					return nil
				}
				return []string{fmt.Sprintf("freshness: %v after the change the provider hands out %v, the server has %v", xFresh, got, want)}
			},
			undo:       func(context.Context) error { return closeOnce() },
			undoCloses: true,
			close:      closeOnce,
			target:     func() string { return base + "/svc/a" },
			// The instance registered again elsewhere: same id, another address.
			otherData: func(n xnode) []byte {
				b, err := instance(framework.NodeName(n.path), "10.0.0.9")
				if err != nil {
					return xOtherData
				}
				return b
			},
		}, nil
	}}
}

// readableInstances lists the instances under dir that the victim may read, as id@address:
// nodes whose data is an instance, with an ACL that lets anyone read.
func readableInstances(ctx context.Context, r *xrun, dir string) ([]string, error) {
	kids, _, err := r.w.adv.Children(ctx, dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range kids {
		p := framework.JoinPath(dir, k)
		b, _, err := r.w.adv.GetData(ctx, p)
		if err != nil {
			continue
		}
		in, err := discovery.Unmarshal[xpayload](b)
		if err != nil {
			continue
		}
		acl, _, err := r.w.adv.GetACL(ctx, p)
		if err != nil || !slices.ContainsFunc(acl, func(a zk.ACL) bool { return a.Scheme == "world" && a.Perms&zk.PermRead != 0 }) {
			continue
		}
		out = append(out, in.ID+"@"+in.Address)
	}
	sort.Strings(out)
	return out, nil
}

// xdiscoveryOps are the discovery operations.
var xdiscoveryOps = []xop{registerOp(), providerOp()}

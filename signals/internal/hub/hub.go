// Package hub fans change notifications out to watchers by key. The stores
// use it to wake lifecycle waiters; a wake is a hint to re-read, never data.
package hub

import "sync"

// Hub is a set of watchers by key. The zero value is ready to use.
type Hub struct {
	mu       sync.Mutex
	watchers map[string]map[chan struct{}]struct{}
	count    int
}

// Watch registers a watcher of key. The channel has a buffer of one, so
// wakes coalesce and never block the notifier.
func (h *Hub) Watch(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.watchers == nil {
		h.watchers = map[string]map[chan struct{}]struct{}{}
	}
	set := h.watchers[key]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		h.watchers[key] = set
	}
	set[ch] = struct{}{}
	h.count++
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(set, ch)
			if len(set) == 0 && h.watchers[key] != nil && len(h.watchers[key]) == 0 {
				delete(h.watchers, key)
			}
			h.count--
			h.mu.Unlock()
		})
	}
}

// Count returns the number of live watchers.
func (h *Hub) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

// Notify wakes the watchers of key.
func (h *Hub) Notify(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.watchers[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// NotifyAll wakes every watcher.
func (h *Hub) NotifyAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.watchers {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

package main

// The command table and the commands' semantics, with Redis 7's replies.
//
// A command runs in one of three ways, by its route:
//   - routeConn: on the connection's own shard, with the connection's state
//     (PING, ECHO, CLIENT, COMMAND, ...): it touches no key;
//   - routeKey: on the shard that owns argv[1], with that shard's db;
//   - routeKeys, routePairs: every argument after the name is a key, or
//     the arguments are key value pairs: with every key on one shard, run
//     on that shard, with its db; with keys on several shards, a
//     transaction (txn.go) runs the command's part for each key (part) on
//     its owner, holding the keys of every shard concerned until all its
//     parts are done, and combines their replies (comb) in the order of
//     the keys: atomically;
//   - routeAll: one part on every shard, the parts' replies combined
//     (comb), shard by shard: not atomically.
//
// Checks that need no key (arity, options, integers) are made where Redis
// makes them, so that the error texts and their precedence are the same.

import (
	"bytes"
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

type route uint8

const (
	routeConn route = iota
	routeKey
	routeKeys  // every argument after the name is a key
	routePairs // key value pairs after the name
	routeAll   // one part on every shard
	routeMulti // MULTI, EXEC, DISCARD, WATCH, UNWATCH: the connection's transaction (multi.go)
)

type combine uint8

const (
	combOne   combine = iota // the only part's reply
	combArray                // an array of the parts' replies
	combSum                  // the sum of the parts' counts
	combOK                   // +OK once every part has run
	combInfo                 // INFO: the sections around the shards' lines
)

// runFunc runs a command (or one part of it) on the db of the shard that
// owns its keys: it appends its reply to out and returns it, and a count
// for the parts that combSum or combInfo add up.
type runFunc func(d *db, argv [][]byte, out []byte) ([]byte, int64)

type command struct {
	name     string // lower case
	arity    int    // Redis's: n exactly, -n at least n (the name included)
	route    route
	comb     combine
	run      runFunc                                           // routeKey, routeKeys, routePairs (keys on one shard); the part of routeAll
	part     runFunc                                           // routeKeys, routePairs: one key's part (argv: the key, or the key and its value)
	conn     func(c *client, argv [][]byte, out []byte) []byte // routeConn
	flags    []string
	keys     [3]int // first key, last key, step (COMMAND)
	group    string
	since    string // the Redis version that brought the command
	summary  string
	validate func(argv [][]byte) string // routeKeys, routePairs, routeAll: an error to reply instead, checked before routing (in a transaction, when it runs)
	check    func(argv [][]byte) string // a container's subcommand and its arity: an error to reply instead, checked when the request arrives, as processCommand does
	read     bool                       // flags has readonly: it shares the keys it waits for with other readers (txn.go)
	write    bool                       // flags has write: refused once the AOF has failed (MISCONF)
	now      bool                       // runs at once after MULTI (EXEC, DISCARD, MULTI, WATCH, QUIT); the others are queued
}

var commands map[string]*command

// commandList is the table in COMMAND's order.
var commandList []*command

func init() {
	commandList = []*command{
		{name: "ping", since: "1.0.0", arity: -1, conn: cmdPing, flags: []string{"fast"}, group: "connection", summary: "Returns the server's liveliness response."},
		{name: "echo", since: "1.0.0", arity: 2, conn: cmdEcho, flags: []string{"fast"}, group: "connection", summary: "Returns the given string."},
		{name: "quit", since: "1.0.0", arity: -1, conn: cmdQuit, now: true, flags: []string{"fast", "no_auth"}, group: "connection", summary: "Closes the connection."},
		{name: "select", since: "1.0.0", arity: 2, conn: cmdSelect, flags: []string{"loading", "stale", "fast"}, group: "connection", summary: "Changes the selected database."},
		{name: "client", since: "2.4.0", arity: -2, conn: cmdClient, check: checkSub, flags: []string{"sentinel"}, group: "connection", summary: "A container for client connection commands."},
		{name: "command", since: "2.8.13", arity: -1, conn: cmdCommand, check: checkSub, flags: []string{"loading", "stale"}, group: "server", summary: "Returns detailed information about all commands."},
		{name: "bgrewriteaof", since: "1.0.0", arity: 1, conn: cmdBgRewriteAOF, flags: []string{"admin", "noscript", "no_async_loading"}, group: "server", summary: "Asynchronously rewrites the append-only file to disk."},
		{name: "config", since: "2.0.0", arity: -2, conn: cmdConfig, check: checkSub, flags: []string{"admin", "noscript"}, group: "server", summary: "A container for server configuration commands."},
		{name: "memory", since: "4.0.0", arity: -2, conn: cmdMemory, check: checkSub, flags: []string{"readonly"}, group: "server", summary: "A container for memory diagnostics commands."},

		{name: "get", since: "1.0.0", arity: 2, route: routeKey, run: cmdGet, flags: []string{"readonly", "fast"}, keys: [3]int{1, 1, 1}, group: "string", summary: "Returns the string value of a key."},
		{name: "set", since: "1.0.0", arity: -3, route: routeKey, run: cmdSet, flags: []string{"write", "denyoom"}, keys: [3]int{1, 1, 1}, group: "string", summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist."},
		{name: "incr", since: "1.0.0", arity: 2, route: routeKey, run: cmdIncr, flags: []string{"write", "denyoom", "fast"}, keys: [3]int{1, 1, 1}, group: "string", summary: "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."},
		{name: "decr", since: "1.0.0", arity: 2, route: routeKey, run: cmdDecr, flags: []string{"write", "denyoom", "fast"}, keys: [3]int{1, 1, 1}, group: "string", summary: "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."},
		{name: "incrby", since: "1.0.0", arity: 3, route: routeKey, run: cmdIncrBy, flags: []string{"write", "denyoom", "fast"}, keys: [3]int{1, 1, 1}, group: "string", summary: "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist."},
		{name: "decrby", since: "1.0.0", arity: 3, route: routeKey, run: cmdDecrBy, flags: []string{"write", "denyoom", "fast"}, keys: [3]int{1, 1, 1}, group: "string", summary: "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist."},
		{name: "mget", since: "1.0.0", arity: -2, route: routeKeys, comb: combArray, run: cmdMGet, part: partGet, flags: []string{"readonly", "fast"}, keys: [3]int{1, -1, 1}, group: "string", summary: "Atomically returns the string values of one or more keys."},
		{name: "mset", since: "1.0.1", arity: -3, route: routePairs, comb: combOK, run: cmdMSet, part: partSet, validate: validatePairs, flags: []string{"write", "denyoom"}, keys: [3]int{1, -1, 2}, group: "string", summary: "Atomically creates or modifies the string values of one or more keys."},
		{name: "msetnx", since: "1.0.1", arity: -3, route: routePairs, comb: combOne, run: cmdMSetNX, validate: validatePairs, flags: []string{"write", "denyoom"}, keys: [3]int{1, -1, 2}, group: "string", summary: "Atomically modifies the string values of one or more keys only when all keys don't exist."},

		{name: "del", since: "1.0.0", arity: -2, route: routeKeys, comb: combSum, run: cmdDel, part: partDel, flags: []string{"write"}, keys: [3]int{1, -1, 1}, group: "generic", summary: "Atomically deletes one or more keys."},
		{name: "exists", since: "1.0.0", arity: -2, route: routeKeys, comb: combSum, run: cmdExists, part: partExists, flags: []string{"readonly", "fast"}, keys: [3]int{1, -1, 1}, group: "generic", summary: "Atomically determines whether one or more keys exist."},
		{name: "expire", since: "1.0.0", arity: -3, route: routeKey, run: cmdExpire, flags: []string{"write", "fast"}, keys: [3]int{1, 1, 1}, group: "generic", summary: "Sets the expiration time of a key in seconds."},
		{name: "pexpire", since: "2.6.0", arity: -3, route: routeKey, run: cmdPexpire, flags: []string{"write", "fast"}, keys: [3]int{1, 1, 1}, group: "generic", summary: "Sets the expiration time of a key in milliseconds."},
		{name: "expireat", since: "1.2.0", arity: -3, route: routeKey, run: cmdExpireAt, flags: []string{"write", "fast"}, keys: [3]int{1, 1, 1}, group: "generic", summary: "Sets the expiration time of a key to a Unix timestamp."},
		{name: "pexpireat", since: "2.6.0", arity: -3, route: routeKey, run: cmdPexpireAt, flags: []string{"write", "fast"}, keys: [3]int{1, 1, 1}, group: "generic", summary: "Sets the expiration time of a key to a Unix milliseconds timestamp."},
		{name: "ttl", since: "1.0.0", arity: 2, route: routeKey, run: cmdTTL, flags: []string{"readonly", "fast"}, keys: [3]int{1, 1, 1}, group: "generic", summary: "Returns the expiration time in seconds of a key."},
		{name: "pttl", since: "2.6.0", arity: 2, route: routeKey, run: cmdPTTL, flags: []string{"readonly", "fast"}, keys: [3]int{1, 1, 1}, group: "generic", summary: "Returns the expiration time in milliseconds of a key."},
		{name: "persist", since: "2.2.0", arity: 2, route: routeKey, run: cmdPersist, flags: []string{"write", "fast"}, keys: [3]int{1, 1, 1}, group: "generic", summary: "Removes the expiration time of a key."},
		{name: "type", since: "1.0.0", arity: 2, route: routeKey, run: cmdType, flags: []string{"readonly", "fast"}, keys: [3]int{1, 1, 1}, group: "generic", summary: "Determines the type of value stored at a key."},
		{name: "dbsize", since: "1.0.0", arity: 1, route: routeAll, comb: combSum, run: partDBSize, flags: []string{"readonly", "fast"}, group: "server", summary: "Returns the number of keys in the database. Shards are counted one at a time: not atomically."},
		{name: "flushall", since: "1.0.0", arity: -1, route: routeAll, comb: combOK, run: partFlush, validate: validateFlush, flags: []string{"write"}, group: "server", summary: "Removes all keys from all databases. Shards are emptied one at a time: not atomically."},
		{name: "flushdb", since: "1.0.0", arity: -1, route: routeAll, comb: combOK, run: partFlush, validate: validateFlush, flags: []string{"write"}, group: "server", summary: "Remove all keys from the current database. Shards are emptied one at a time: not atomically."},
		{name: "info", since: "1.0.0", arity: -1, route: routeAll, comb: combInfo, run: partInfo, flags: []string{"loading", "stale"}, group: "server", summary: "Returns information and statistics about the server. Shards are read one at a time: not atomically."},

		{name: "lpush", since: "1.0.0", arity: -3, route: routeKey, run: cmdLPush, flags: []string{"write", "denyoom", "fast"}, keys: [3]int{1, 1, 1}, group: "list", summary: "Prepends one or more elements to a list. Creates the key if it doesn't exist."},
		{name: "rpush", since: "1.0.0", arity: -3, route: routeKey, run: cmdRPush, flags: []string{"write", "denyoom", "fast"}, keys: [3]int{1, 1, 1}, group: "list", summary: "Appends one or more elements to a list. Creates the key if it doesn't exist."},
		{name: "lpop", since: "1.0.0", arity: -2, route: routeKey, run: cmdLPop, flags: []string{"write", "fast"}, keys: [3]int{1, 1, 1}, group: "list", summary: "Returns the first elements in a list after removing it. Deletes the list if the last element was popped."},
		{name: "rpop", since: "1.0.0", arity: -2, route: routeKey, run: cmdRPop, flags: []string{"write", "fast"}, keys: [3]int{1, 1, 1}, group: "list", summary: "Returns and removes the last elements of a list. Deletes the list if the last element was popped."},
		{name: "lrange", since: "1.0.0", arity: 4, route: routeKey, run: cmdLRange, flags: []string{"readonly"}, keys: [3]int{1, 1, 1}, group: "list", summary: "Returns a range of elements from a list."},
		{name: "llen", since: "1.0.0", arity: 2, route: routeKey, run: cmdLLen, flags: []string{"readonly", "fast"}, keys: [3]int{1, 1, 1}, group: "list", summary: "Returns the length of a list."},

		{name: "sadd", since: "1.0.0", arity: -3, route: routeKey, run: cmdSAdd, flags: []string{"write", "denyoom", "fast"}, keys: [3]int{1, 1, 1}, group: "set", summary: "Adds one or more members to a set. Creates the key if it doesn't exist."},
		{name: "scard", since: "1.0.0", arity: 2, route: routeKey, run: cmdSCard, flags: []string{"readonly", "fast"}, keys: [3]int{1, 1, 1}, group: "set", summary: "Returns the number of members in a set."},
		{name: "srem", since: "1.0.0", arity: -3, route: routeKey, run: cmdSRem, flags: []string{"write", "fast"}, keys: [3]int{1, 1, 1}, group: "set", summary: "Removes one or more members from a set. Deletes the set if the last member was removed."},
		{name: "smembers", since: "1.0.0", arity: 2, route: routeKey, run: cmdSMembers, flags: []string{"readonly"}, keys: [3]int{1, 1, 1}, group: "set", summary: "Returns all members of a set."},
		{name: "sismember", since: "1.0.0", arity: 3, route: routeKey, run: cmdSIsMember, flags: []string{"readonly", "fast"}, keys: [3]int{1, 1, 1}, group: "set", summary: "Determines whether a member belongs to a set."},
		{name: "spop", since: "1.0.0", arity: -2, route: routeKey, run: cmdSPop, flags: []string{"write", "fast"}, keys: [3]int{1, 1, 1}, group: "set", summary: "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped."},

		{name: "hset", since: "2.0.0", arity: -4, route: routeKey, run: cmdHSet, flags: []string{"write", "denyoom", "fast"}, keys: [3]int{1, 1, 1}, group: "hash", summary: "Creates or modifies the value of a field in a hash."},
		{name: "hget", since: "2.0.0", arity: 3, route: routeKey, run: cmdHGet, flags: []string{"readonly", "fast"}, keys: [3]int{1, 1, 1}, group: "hash", summary: "Returns the value of a field in a hash."},
		{name: "hgetall", since: "2.0.0", arity: 2, route: routeKey, run: cmdHGetAll, flags: []string{"readonly"}, keys: [3]int{1, 1, 1}, group: "hash", summary: "Returns all fields and values in a hash."},
		{name: "hlen", since: "2.0.0", arity: 2, route: routeKey, run: cmdHLen, flags: []string{"readonly", "fast"}, keys: [3]int{1, 1, 1}, group: "hash", summary: "Returns the number of fields in a hash."},

		{name: "multi", since: "1.2.0", arity: 1, route: routeMulti, now: true, flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, group: "transactions", summary: "Starts a transaction."},
		{name: "exec", since: "1.2.0", arity: 1, route: routeMulti, now: true, flags: []string{"noscript", "loading", "stale", "skip_slowlog"}, group: "transactions", summary: "Executes all commands in a transaction."},
		{name: "discard", since: "2.0.0", arity: 1, route: routeMulti, now: true, flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, group: "transactions", summary: "Discards a transaction."},
		{name: "watch", since: "2.2.0", arity: -2, route: routeMulti, now: true, flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, keys: [3]int{1, -1, 1}, group: "transactions", summary: "Monitors changes to keys to determine the execution of a transaction."},
		{name: "unwatch", since: "2.2.0", arity: 1, route: routeMulti, flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, group: "transactions", summary: "Forgets about watched keys of a transaction."},

		{name: "zadd", since: "1.2.0", arity: -4, route: routeKey, run: cmdZAdd, flags: []string{"write", "denyoom", "fast"}, keys: [3]int{1, 1, 1}, group: "sorted-set", summary: "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist."},
		{name: "zcard", since: "1.2.0", arity: 2, route: routeKey, run: cmdZCard, flags: []string{"readonly", "fast"}, keys: [3]int{1, 1, 1}, group: "sorted-set", summary: "Returns the number of members in a sorted set."},
		{name: "zrange", since: "1.2.0", arity: -4, route: routeKey, run: cmdZRange, flags: []string{"readonly"}, keys: [3]int{1, 1, 1}, group: "sorted-set", summary: "Returns members in a sorted set within a range of indexes, scores (BYSCORE) or names (BYLEX)."},
		{name: "zpopmin", since: "5.0.0", arity: -2, route: routeKey, run: cmdZPopMin, flags: []string{"write", "fast"}, keys: [3]int{1, 1, 1}, group: "sorted-set", summary: "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped."},
	}
	commands = make(map[string]*command, len(commandList))
	for _, c := range commandList {
		commands[c.name] = c
		for _, f := range c.flags {
			c.read = c.read || f == "readonly"
			c.write = c.write || f == "write"
		}
	}
}

// lookup finds the command named name, in any case, without allocating.
func lookup(name []byte) *command {
	var low [16]byte
	if len(name) > len(low) {
		return nil
	}
	for i, c := range name {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	return commands[string(low[:len(name)])]
}

// arityOK checks argc against Redis's arity convention.
func arityOK(arity, argc int) bool {
	if arity > 0 {
		return argc == arity
	}
	return argc >= -arity
}

func errArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// errUnknown is Redis's reply to an unknown command: the name and the
// beginning of the arguments, each cut at 128 bytes in all. Redis formats
// them as C strings, so each also ends at its first NUL byte.
func errUnknown(argv [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	name := cString(argv[0])
	b.Write(name[:min(len(name), 128)])
	b.WriteString("', with args beginning with: ")
	var args []byte
	for _, a := range argv[1:] {
		if len(args) >= 128 {
			break
		}
		a = cString(a)
		args = append(args, '\'')
		args = append(args, a[:min(len(a), 128-len(args)+1)]...)
		args = append(args, '\'', ' ')
	}
	b.Write(args)
	return b.String()
}

// subcommands are the subcommands of the container commands, with their
// arities, as processCommand checks them.
var subcommands = map[string]map[string]int{
	"client":  {"setname": 3, "getname": 2, "id": 2},
	"config":  {"get": -3},
	"command": {"count": 2, "info": -2, "docs": -2},
	"memory":  {"purge": 2},
}

// checkSub checks a container command's subcommand and its arity, as
// processCommand does before the command runs; in a transaction, its
// error flags the transaction.
func checkSub(argv [][]byte) string {
	if len(argv) < 2 {
		return ""
	}
	name := strings.ToLower(string(argv[0]))
	sub := strings.ToLower(string(argv[1]))
	arity, ok := subcommands[name][sub]
	if !ok {
		return errSubcommand(argv)
	}
	if !arityOK(arity, len(argv)) {
		return errArity(name + "|" + sub)
	}
	return ""
}

func errSubcommand(argv [][]byte) string {
	sub := cString(argv[1])
	sub = sub[:min(len(sub), 128)]
	return "ERR unknown subcommand '" + string(sub) + "'. Try " + strings.ToUpper(string(argv[0])) + " HELP."
}

// cString returns b up to its first NUL byte: what C's printf shows of it.
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

func eq(a []byte, s string) bool { return len(a) == len(s) && strings.EqualFold(string(a), s) }

// getObj returns key's object of type T: the zero T if key does not
// exist; wrong if it holds another type.
func getObj[T any](d *db, key []byte) (v T, wrong bool) {
	o, wrong := d.getObj(key)
	if wrong || o == nil {
		return v, wrong
	}
	v, ok := o.(T)
	return v, !ok
}

// parseCount reads the optional count of LPOP, RPOP, SPOP and ZPOPMIN
// (argv[2]): 1 and false without one. errMsg is Redis's reply to a bad
// one, "" if it is good.
func parseCount(argv [][]byte) (count int64, has bool, errMsg string) {
	if len(argv) < 3 {
		return 1, false, ""
	}
	n, ok := parseInt(argv[2])
	if !ok || n < 0 {
		return 0, true, "ERR value is out of range, must be positive"
	}
	return n, true, ""
}

// Connection commands.

func cmdPing(c *client, argv [][]byte, out []byte) []byte {
	switch len(argv) {
	case 1:
		return append(out, "+PONG\r\n"...)
	case 2:
		return appendBulk(out, argv[1])
	}
	return appendError(out, errArity("ping"))
}

func cmdEcho(c *client, argv [][]byte, out []byte) []byte { return appendBulk(out, argv[1]) }

func cmdQuit(c *client, argv [][]byte, out []byte) []byte {
	c.pl.quit = true
	return append(out, replyOK...)
}

func cmdSelect(c *client, argv [][]byte, out []byte) []byte {
	n, ok := parseInt(argv[1])
	if !ok || n < math.MinInt32 || n > math.MaxInt32 {
		return appendError(out, errNotInt)
	}
	if n != 0 {
		// One database only: the keyspace is split over the shards instead.
		return appendError(out, "ERR DB index is out of range")
	}
	return append(out, replyOK...)
}

func cmdClient(c *client, argv [][]byte, out []byte) []byte {
	switch {
	case eq(argv[1], "setname"):
		if len(argv) != 3 {
			return appendError(out, errArity("client|setname"))
		}
		for _, ch := range argv[2] {
			if ch < '!' || ch > '~' {
				return appendError(out, "ERR Client names cannot contain spaces, newlines or special characters.")
			}
		}
		c.name = string(argv[2])
		return append(out, replyOK...)
	case eq(argv[1], "getname"):
		if len(argv) != 2 {
			return appendError(out, errArity("client|getname"))
		}
		if c.name == "" {
			return appendNull(out)
		}
		return appendBulkString(out, c.name)
	case eq(argv[1], "id"):
		if len(argv) != 2 {
			return appendError(out, errArity("client|id"))
		}
		return appendInt(out, int64(c.id))
	}
	return appendError(out, errSubcommand(argv))
}

func cmdConfig(c *client, argv [][]byte, out []byte) []byte {
	switch {
	case eq(argv[1], "get"):
		if len(argv) < 3 {
			return appendError(out, errArity("config|get"))
		}
		var found [][2]string
		for _, p := range argv[2:] {
			for _, kv := range c.srv.configTable() {
				if eq(p, kv[0]) {
					found = append(found, kv)
				}
			}
		}
		out = appendArray(out, 2*len(found))
		for _, kv := range found {
			out = appendBulkString(out, kv[0])
			out = appendBulkString(out, kv[1])
		}
		return out
	}
	return appendError(out, errSubcommand(argv))
}

// cmdBgRewriteAOF answers that the AOF is not rewritten by this server
// (README: Persistence).
func cmdBgRewriteAOF(c *client, argv [][]byte, out []byte) []byte {
	return appendError(out, "ERR BGREWRITEAOF is not supported: this server's AOF grows until it is compacted offline (see its README)")
}

func cmdMemory(c *client, argv [][]byte, out []byte) []byte {
	if eq(argv[1], "purge") {
		if len(argv) != 2 {
			return appendError(out, errArity("memory|purge"))
		}
		purgeMemory()
		return append(out, replyOK...)
	}
	return appendError(out, errSubcommand(argv))
}

func cmdCommand(c *client, argv [][]byte, out []byte) []byte {
	if len(argv) == 1 {
		out = appendArray(out, len(commandList))
		for _, cmd := range commandList {
			out = appendCommandInfo(out, cmd)
		}
		return out
	}
	switch {
	case eq(argv[1], "count"):
		if len(argv) != 2 {
			return appendError(out, errArity("command|count"))
		}
		return appendInt(out, int64(len(commandList)))
	case eq(argv[1], "info"):
		out = appendArray(out, len(argv)-2)
		for _, name := range argv[2:] {
			if cmd := lookup(name); cmd != nil {
				out = appendCommandInfo(out, cmd)
			} else {
				out = appendNullArray(out)
			}
		}
		return out
	case eq(argv[1], "docs"):
		list := commandList
		if len(argv) > 2 {
			list = nil
			for _, name := range argv[2:] {
				if cmd := lookup(name); cmd != nil {
					list = append(list, cmd)
				}
			}
		}
		out = appendArray(out, 2*len(list))
		for _, cmd := range list {
			out = appendBulkString(out, cmd.name)
			out = appendArray(out, 6)
			out = appendBulkString(out, "summary")
			out = appendBulkString(out, cmd.summary)
			out = appendBulkString(out, "since")
			out = appendBulkString(out, cmd.since)
			out = appendBulkString(out, "group")
			out = appendBulkString(out, cmd.group)
		}
		return out
	}
	return appendError(out, errSubcommand(argv))
}

// appendCommandInfo appends one entry of COMMAND's reply, in Redis 7's
// shape: name, arity, flags, first key, last key, step, ACL categories,
// tips, key specifications, subcommands.
func appendCommandInfo(out []byte, cmd *command) []byte {
	out = appendArray(out, 10)
	out = appendBulkString(out, cmd.name)
	out = appendInt(out, int64(cmd.arity))
	out = appendArray(out, len(cmd.flags))
	for _, f := range cmd.flags {
		out = appendSimple(out, f)
	}
	out = appendInt(out, int64(cmd.keys[0]))
	out = appendInt(out, int64(cmd.keys[1]))
	out = appendInt(out, int64(cmd.keys[2]))
	out = appendArray(out, 1)
	category := strings.ReplaceAll(cmd.group, "-", "")
	if category == "transactions" {
		category = "transaction"
	}
	out = appendSimple(out, "@"+category)
	out = appendArray(out, 0)
	out = appendArray(out, 0)
	return appendArray(out, 0)
}

// String commands.

func cmdGet(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	v, found, wrong := d.getString(argv[1])
	switch {
	case wrong:
		return appendError(out, errWrongTyp), 0
	case !found:
		return appendNull(out), 0
	}
	return appendBulkString(out, v), 0
}

// SET's flags.
const (
	setNX = 1 << iota
	setXX
	setGet
	setKeepTTL
	setEX
	setPX
	setEXAT
	setPXAT
)

func cmdSet(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	flags := 0
	var expire []byte
	for j := 3; j < len(argv); j++ {
		opt := argv[j]
		hasNext := j+1 < len(argv)
		switch {
		case eq(opt, "nx") && flags&setXX == 0:
			flags |= setNX
		case eq(opt, "xx") && flags&setNX == 0:
			flags |= setXX
		case eq(opt, "get"):
			flags |= setGet
		case eq(opt, "keepttl") && flags&(setEX|setPX|setEXAT|setPXAT) == 0:
			flags |= setKeepTTL
		case eq(opt, "ex") && flags&(setKeepTTL|setPX|setEXAT|setPXAT) == 0 && hasNext:
			flags |= setEX
			expire = argv[j+1]
			j++
		case eq(opt, "px") && flags&(setKeepTTL|setEX|setEXAT|setPXAT) == 0 && hasNext:
			flags |= setPX
			expire = argv[j+1]
			j++
		case eq(opt, "exat") && flags&(setKeepTTL|setEX|setPX|setPXAT) == 0 && hasNext:
			flags |= setEXAT
			expire = argv[j+1]
			j++
		case eq(opt, "pxat") && flags&(setKeepTTL|setEX|setPX|setEXAT) == 0 && hasNext:
			flags |= setPXAT
			expire = argv[j+1]
			j++
		default:
			return appendError(out, errSyntax), 0
		}
	}
	var at int64
	if expire != nil {
		ms, ok := parseInt(expire)
		if !ok {
			return appendError(out, errNotInt), 0
		}
		bad := appendError(out, "ERR invalid expire time in 'set' command")
		if ms <= 0 {
			return bad, 0
		}
		if flags&(setEX|setEXAT) != 0 {
			if ms > math.MaxInt64/1000 {
				return bad, 0
			}
			ms *= 1000
		}
		if flags&(setEX|setPX) != 0 {
			now := d.clock()
			if ms > math.MaxInt64-now {
				return bad, 0
			}
			ms += now
		}
		at = ms
	}
	key := argv[1]
	if flags&setGet != 0 {
		v, found, wrong := d.getString(key)
		switch {
		case wrong:
			return appendError(out, errWrongTyp), 0
		case found:
			out = appendBulkString(out, v)
		default:
			out = appendNull(out)
		}
	}
	if flags&(setNX|setXX) != 0 && d.exists(key) == (flags&setXX == 0) {
		if flags&setGet == 0 {
			out = appendNull(out)
		}
		return out, 0
	}
	d.setString(key, argv[2], flags&setKeepTTL != 0)
	if expire != nil {
		d.setExpire(key, at)
	}
	if d.aof != nil {
		propagateSet(d, argv, flags, expire != nil, at)
	}
	if flags&setGet == 0 {
		out = append(out, replyOK...)
	}
	return out, 0
}

func cmdIncr(d *db, argv [][]byte, out []byte) ([]byte, int64) { return incrBy(d, argv, 1, out) }
func cmdDecr(d *db, argv [][]byte, out []byte) ([]byte, int64) { return incrBy(d, argv, -1, out) }

func cmdIncrBy(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	n, ok := parseInt(argv[2])
	if !ok {
		return appendError(out, errNotInt), 0
	}
	return incrBy(d, argv, n, out)
}

func cmdDecrBy(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	n, ok := parseInt(argv[2])
	if !ok {
		return appendError(out, errNotInt), 0
	}
	if n == math.MinInt64 {
		return appendError(out, "ERR decrement would overflow"), 0
	}
	return incrBy(d, argv, -n, out)
}

// incrBy adds by to the integer at argv[1] and propagates argv.
func incrBy(d *db, argv [][]byte, by int64, out []byte) ([]byte, int64) {
	key := argv[1]
	v, found, wrong := d.getString(key)
	if wrong {
		return appendError(out, errWrongTyp), 0
	}
	var old int64
	if found {
		var ok bool
		if old, ok = parseInt([]byte(v)); !ok {
			return appendError(out, errNotInt), 0
		}
	}
	if (by < 0 && old < 0 && by < math.MinInt64-old) || (by > 0 && old > 0 && by > math.MaxInt64-old) {
		return appendError(out, "ERR increment or decrement would overflow"), 0
	}
	n := old + by
	var num [20]byte
	d.setString(key, strconv.AppendInt(num[:0], n, 10), true)
	d.propagate(argv)
	return appendInt(out, n), 0
}

// MGET, MSET and MSETNX of keys on one shard, and their parts, for a key
// (and its value), of a transaction (txn.go).

func cmdMGet(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	out = appendArray(out, len(argv)-1)
	for i := 1; i < len(argv); i++ {
		out, _ = partGet(d, argv[i:i+1], out)
	}
	return out, 0
}

func cmdMSet(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	for i := 1; i+1 < len(argv); i += 2 {
		d.setString(argv[i], argv[i+1], false)
	}
	d.propagate(argv)
	return append(out, replyOK...), 0
}

// cmdMSetNX sets every key, or none if one of them exists (whatever its
// type).
func cmdMSetNX(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	for i := 1; i+1 < len(argv); i += 2 {
		if d.exists(argv[i]) {
			return appendInt(out, 0), 0
		}
	}
	for i := 1; i+1 < len(argv); i += 2 {
		d.setString(argv[i], argv[i+1], false)
	}
	d.propagate(argv)
	return appendInt(out, 1), 0
}

func partGet(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	v, found, _ := d.getString(argv[0])
	if !found {
		return appendNull(out), 0
	}
	return appendBulkString(out, v), 0
}

func validatePairs(argv [][]byte) string {
	if len(argv)%2 == 0 {
		return errArity(strings.ToLower(string(argv[0])))
	}
	return ""
}

func partSet(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	d.setString(argv[0], argv[1], false)
	return out, 0
}

// Keys.

func cmdDel(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	var n int64
	for i := 1; i < len(argv); i++ {
		_, k := partDel(d, argv[i:i+1], nil)
		n += k
	}
	if n > 0 {
		d.propagate(argv)
	}
	return appendInt(out, n), 0
}

func cmdExists(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	var n int64
	for i := 1; i < len(argv); i++ {
		_, k := partExists(d, argv[i:i+1], nil)
		n += k
	}
	return appendInt(out, n), 0
}

func partDel(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	d.expireIfNeeded(argv[0])
	if d.delete(argv[0]) {
		return out, 1
	}
	return out, 0
}

func partExists(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	if d.exists(argv[0]) {
		return out, 1
	}
	return out, 0
}

const (
	expNX = 1 << iota
	expXX
	expGT
	expLT
)

func cmdExpire(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	return expireGeneric(d, argv, 1000, true, "expire", out)
}

func cmdPexpire(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	return expireGeneric(d, argv, 1, true, "pexpire", out)
}

func cmdExpireAt(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	return expireGeneric(d, argv, 1000, false, "expireat", out)
}

func cmdPexpireAt(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	return expireGeneric(d, argv, 1, false, "pexpireat", out)
}

// expireGeneric is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT: a time in
// unit milliseconds, from now if relative, else from the Unix epoch. It
// propagates PEXPIREAT with the absolute time, or a DEL when the time has
// passed, as redis-server does.
func expireGeneric(d *db, argv [][]byte, unit int64, relative bool, name string, out []byte) ([]byte, int64) {
	flags := 0
	for _, opt := range argv[3:] {
		switch {
		case eq(opt, "nx"):
			flags |= expNX
		case eq(opt, "xx"):
			flags |= expXX
		case eq(opt, "gt"):
			flags |= expGT
		case eq(opt, "lt"):
			flags |= expLT
		default:
			return appendError(out, "ERR Unsupported option "+string(opt)), 0
		}
	}
	if flags&expNX != 0 && flags&(expXX|expGT|expLT) != 0 {
		return appendError(out, "ERR NX and XX, GT or LT options at the same time are not compatible"), 0
	}
	if flags&expGT != 0 && flags&expLT != 0 {
		return appendError(out, "ERR GT and LT options at the same time are not compatible"), 0
	}
	when, ok := parseInt(argv[2])
	if !ok {
		return appendError(out, errNotInt), 0
	}
	bad := "ERR invalid expire time in '" + name + "' command"
	if unit == 1000 {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			return appendError(out, bad), 0
		}
		when *= 1000
	}
	var now int64
	if relative {
		now = d.clock()
	}
	if when > math.MaxInt64-now {
		return appendError(out, bad), 0
	}
	when += now
	cur, found := d.ttl(argv[1])
	if !found {
		return appendInt(out, 0), 0
	}
	if flags != 0 {
		switch {
		case flags&expNX != 0 && cur != 0,
			flags&expXX != 0 && cur == 0,
			flags&expGT != 0 && (cur == 0 || when <= cur),
			flags&expLT != 0 && cur != 0 && when >= cur:
			return appendInt(out, 0), 0
		}
	}
	if d.aof != nil && when <= d.clock() {
		d.delete(argv[1])
		d.propagate([][]byte{cmdDEL, argv[1]})
		return appendInt(out, 1), 0
	}
	d.setExpire(argv[1], when)
	if d.aof != nil {
		op := append([][]byte(nil), argv...)
		if !eq(op[0], "pexpireat") {
			op[0] = []byte("PEXPIREAT")
		}
		op[2] = strconv.AppendInt(nil, when, 10)
		d.propagate(op)
	}
	return appendInt(out, 1), 0
}

func cmdTTL(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	return ttlGeneric(d, argv[1], true, out)
}
func cmdPTTL(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	return ttlGeneric(d, argv[1], false, out)
}

func ttlGeneric(d *db, key []byte, seconds bool, out []byte) ([]byte, int64) {
	at, found := d.ttl(key)
	switch {
	case !found:
		return appendInt(out, -2), 0
	case at == 0:
		return appendInt(out, -1), 0
	}
	left := max(at-d.clock(), 0)
	if seconds {
		left = (left + 500) / 1000
	}
	return appendInt(out, left), 0
}

func cmdPersist(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	if d.persist(argv[1]) {
		d.propagate(argv)
		return appendInt(out, 1), 0
	}
	return appendInt(out, 0), 0
}

func cmdType(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	d.expireIfNeeded(argv[1])
	if _, ok := d.strs[string(argv[1])]; ok {
		return appendSimple(out, "string"), 0
	}
	switch d.objs[string(argv[1])].(type) {
	case *list:
		return appendSimple(out, "list"), 0
	case set:
		return appendSimple(out, "set"), 0
	case *hash:
		return appendSimple(out, "hash"), 0
	case *zset:
		return appendSimple(out, "zset"), 0
	}
	return appendSimple(out, "none"), 0
}

// Server.

func partDBSize(d *db, argv [][]byte, out []byte) ([]byte, int64) { return out, int64(d.keys()) }

func validateFlush(argv [][]byte) string {
	if len(argv) > 2 || (len(argv) == 2 && !eq(argv[1], "async") && !eq(argv[1], "sync")) {
		return errSyntax
	}
	return ""
}

func partFlush(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	keys := d.aofKeys()
	d.flush()
	d.propagateFlush(argv, keys)
	return out, 0
}

// Lists.

func cmdLPush(d *db, argv [][]byte, out []byte) ([]byte, int64) { return push(d, argv, true, out) }
func cmdRPush(d *db, argv [][]byte, out []byte) ([]byte, int64) { return push(d, argv, false, out) }

func push(d *db, argv [][]byte, front bool, out []byte) ([]byte, int64) {
	l, wrong := getObj[*list](d, argv[1])
	if wrong {
		return appendError(out, errWrongTyp), 0
	}
	if l == nil {
		l = &list{}
		d.setObj(argv[1], l)
	}
	for _, v := range argv[2:] {
		if front {
			l.pushFront(string(v))
		} else {
			l.pushBack(string(v))
		}
	}
	d.touch(argv[1])
	d.propagate(argv)
	return appendInt(out, int64(l.n)), 0
}

func cmdLPop(d *db, argv [][]byte, out []byte) ([]byte, int64) { return pop(d, argv, true, out) }
func cmdRPop(d *db, argv [][]byte, out []byte) ([]byte, int64) { return pop(d, argv, false, out) }

func pop(d *db, argv [][]byte, front bool, out []byte) ([]byte, int64) {
	if len(argv) > 3 {
		return appendError(out, errArity(strings.ToLower(string(argv[0])))), 0
	}
	count, hasCount, bad := parseCount(argv)
	if bad != "" {
		return appendError(out, bad), 0
	}
	l, wrong := getObj[*list](d, argv[1])
	switch {
	case wrong:
		return appendError(out, errWrongTyp), 0
	case l == nil && hasCount:
		return appendNullArray(out), 0
	case l == nil:
		return appendNull(out), 0
	}
	next := func() string {
		if front {
			return l.popFront()
		}
		return l.popBack()
	}
	if !hasCount {
		out = appendBulkString(out, next())
	} else {
		n := int(min(count, int64(l.n)))
		out = appendArray(out, n)
		for range n {
			out = appendBulkString(out, next())
		}
	}
	if l.n == 0 {
		d.delete(argv[1])
	} else if !hasCount || count > 0 {
		d.touch(argv[1])
	}
	if !hasCount || count > 0 {
		d.propagate(argv)
	}
	return out, 0
}

func cmdLRange(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	start, ok1 := parseInt(argv[2])
	end, ok2 := parseInt(argv[3])
	if !ok1 || !ok2 {
		return appendError(out, errNotInt), 0
	}
	l, wrong := getObj[*list](d, argv[1])
	switch {
	case wrong:
		return appendError(out, errWrongTyp), 0
	case l == nil:
		return appendArray(out, 0), 0
	}
	n := int64(l.n)
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start = max(start, 0)
	if start > end || start >= n {
		return appendArray(out, 0), 0
	}
	end = min(end, n-1)
	out = appendArray(out, int(end-start+1))
	for i := start; i <= end; i++ {
		out = appendBulkString(out, l.at(int(i)))
	}
	return out, 0
}

func cmdLLen(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	l, wrong := getObj[*list](d, argv[1])
	switch {
	case wrong:
		return appendError(out, errWrongTyp), 0
	case l == nil:
		return appendInt(out, 0), 0
	}
	return appendInt(out, int64(l.n)), 0
}

// Sets.

func cmdSAdd(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	s, wrong := getObj[set](d, argv[1])
	if wrong {
		return appendError(out, errWrongTyp), 0
	}
	if s == nil {
		s = set{}
		d.setObj(argv[1], s)
	}
	added := 0
	for _, m := range argv[2:] {
		if _, ok := s[string(m)]; !ok {
			s[string(m)] = struct{}{}
			added++
		}
	}
	if added > 0 {
		d.touch(argv[1])
		d.propagate(argv)
	}
	return appendInt(out, int64(added)), 0
}

func cmdSCard(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	s, wrong := getObj[set](d, argv[1])
	if wrong {
		return appendError(out, errWrongTyp), 0
	}
	return appendInt(out, int64(len(s))), 0
}

func cmdSIsMember(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	s, wrong := getObj[set](d, argv[1])
	if wrong {
		return appendError(out, errWrongTyp), 0
	}
	if _, ok := s[string(argv[2])]; ok {
		return appendInt(out, 1), 0
	}
	return appendInt(out, 0), 0
}

func cmdSPop(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	if len(argv) > 3 {
		return appendError(out, errSyntax), 0
	}
	count, hasCount, bad := parseCount(argv)
	if bad != "" {
		return appendError(out, bad), 0
	}
	s, wrong := getObj[set](d, argv[1])
	switch {
	case wrong:
		return appendError(out, errWrongTyp), 0
	case s == nil && hasCount:
		return appendArray(out, 0), 0
	case s == nil:
		return appendNull(out), 0
	}
	n := int(min(count, int64(len(s))))
	if hasCount {
		out = appendArray(out, n)
	}
	// A random start: Go's map iteration begins at a random place; skip a
	// few more so that small sets do not always give the same member.
	skip := rand.IntN(min(len(s), 8))
	var ops [][][]byte // propagated: the SREM of each member popped, or a DEL of the set
	for range n {
		for m := range s {
			if skip > 0 {
				skip--
				continue
			}
			delete(s, m)
			out = appendBulkString(out, m)
			if d.aof != nil {
				ops = append(ops, [][]byte{[]byte("SREM"), argv[1], []byte(m)})
			}
			break
		}
	}
	if len(s) == 0 {
		d.delete(argv[1])
		if hasCount {
			ops = [][][]byte{{cmdDEL, argv[1]}}
		}
	} else if n > 0 {
		d.touch(argv[1])
	}
	d.propagateAll(ops)
	return out, 0
}

// Hashes.

func cmdHSet(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	if len(argv)%2 == 1 {
		return appendError(out, errArity(strings.ToLower(string(argv[0])))), 0
	}
	h, wrong := getObj[*hash](d, argv[1])
	if wrong {
		return appendError(out, errWrongTyp), 0
	}
	if h == nil {
		h = newHash()
		d.setObj(argv[1], h)
	}
	added := 0
	for i := 2; i < len(argv); i += 2 {
		if h.set(string(argv[i]), string(argv[i+1])) {
			added++
		}
	}
	d.touch(argv[1])
	d.propagate(argv)
	return appendInt(out, int64(added)), 0
}

func cmdHGet(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	h, wrong := getObj[*hash](d, argv[1])
	switch {
	case wrong:
		return appendError(out, errWrongTyp), 0
	case h == nil:
		return appendNull(out), 0
	}
	v, ok := h.m[string(argv[2])]
	if !ok {
		return appendNull(out), 0
	}
	return appendBulkString(out, v), 0
}

func cmdHLen(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	h, wrong := getObj[*hash](d, argv[1])
	switch {
	case wrong:
		return appendError(out, errWrongTyp), 0
	case h == nil:
		return appendInt(out, 0), 0
	}
	return appendInt(out, int64(len(h.m))), 0
}

// Sorted sets.

// parseScore reads a score as Redis does (getDoubleFromObject): C's
// strtod over the whole argument, no leading space, and neither NaN nor a
// result out of range (an overflow to ±inf, or an underflow to zero of a
// number that is not zero; a literal inf is a score). strtod reads what
// strconv.ParseFloat reads, decimal and hexadecimal, except that it takes
// no '_' and a hexadecimal number needs no 'p' exponent.
func parseScore(b []byte) (float64, bool) {
	if len(b) == 0 || isSpace(b[0]) || bytes.ContainsRune(b, '_') {
		return 0, false
	}
	body := b
	if body[0] == '+' || body[0] == '-' {
		body = body[1:]
	}
	hex := len(body) > 1 && body[0] == '0' && body[1]|0x20 == 'x'
	s := string(b)
	if hex && !bytes.ContainsAny(body, "pP") {
		s += "p0"
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 && nonzeroMantissa(body, hex) {
		return 0, false // underflow: strtod's ERANGE with a zero result
	}
	return f, true
}

// nonzeroMantissa reports whether the digits of a number before its
// exponent hold one that is not zero.
func nonzeroMantissa(num []byte, hex bool) bool {
	if hex {
		num = num[2:]
	}
	for _, c := range num {
		switch {
		case c >= '1' && c <= '9':
			return true
		case hex && (c|0x20) >= 'a' && (c|0x20) <= 'f':
			return true
		case !hex && (c|0x20) == 'e', hex && (c|0x20) == 'p':
			return false
		}
	}
	return false
}

// appendScore writes a score as Redis does: integers without a fraction,
// others with 17 significant digits, infinities as inf and -inf.
func appendScore(out []byte, f float64) []byte {
	var num [32]byte
	var s []byte
	switch {
	case math.IsInf(f, 1):
		s = append(num[:0], "inf"...)
	case math.IsInf(f, -1):
		s = append(num[:0], "-inf"...)
	case f == math.Trunc(f) && math.Abs(f) < 1<<52:
		s = strconv.AppendInt(num[:0], int64(f), 10)
	default:
		s = strconv.AppendFloat(num[:0], f, 'g', 17, 64)
	}
	return appendBulk(out, s)
}

func cmdZAdd(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	if len(argv)%2 == 1 {
		return appendError(out, errSyntax), 0
	}
	scores := make([]float64, 0, (len(argv)-2)/2)
	for i := 2; i < len(argv); i += 2 {
		f, ok := parseScore(argv[i])
		if !ok {
			return appendError(out, "ERR value is not a valid float"), 0
		}
		scores = append(scores, f)
	}
	z, wrong := getObj[*zset](d, argv[1])
	if wrong {
		return appendError(out, errWrongTyp), 0
	}
	if z == nil {
		z = newZset()
		d.setObj(argv[1], z)
	}
	added, changed := 0, false
	for i, f := range scores {
		isNew, updated := z.add(string(argv[3+2*i]), f)
		if isNew {
			added++
		}
		changed = changed || updated
	}
	if changed {
		d.touch(argv[1])
		d.propagate(argv)
	}
	return appendInt(out, int64(added)), 0
}

func cmdZCard(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	z, wrong := getObj[*zset](d, argv[1])
	if wrong {
		return appendError(out, errWrongTyp), 0
	}
	if z == nil {
		return appendInt(out, 0), 0
	}
	return appendInt(out, int64(len(z.members))), 0
}

func cmdZPopMin(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	if len(argv) > 3 {
		return appendError(out, errSyntax), 0
	}
	count, _, bad := parseCount(argv)
	if bad != "" {
		return appendError(out, bad), 0
	}
	z, wrong := getObj[*zset](d, argv[1])
	switch {
	case wrong:
		return appendError(out, errWrongTyp), 0
	case z == nil:
		return appendArray(out, 0), 0
	}
	n := int(min(count, int64(len(z.members))))
	out = appendArray(out, 2*n)
	for range n {
		e, _ := z.popMin()
		out = appendBulkString(out, e.member)
		out = appendScore(out, e.score)
	}
	if len(z.members) == 0 {
		d.delete(argv[1])
	} else if n > 0 {
		d.touch(argv[1])
	}
	if n > 0 {
		d.propagate(argv)
	}
	return out, 0
}

// Reads of whole sets, hashes and sorted sets.

func cmdSMembers(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	s, wrong := getObj[set](d, argv[1])
	if wrong {
		return appendError(out, errWrongTyp), 0
	}
	out = appendArray(out, len(s))
	for _, m := range s.members() {
		out = appendBulkString(out, m)
	}
	return out, 0
}

// intsetMax is redis-server's set-max-intset-entries: a set of at most
// this many integers is an intset, which keeps them in numeric order.
const intsetMax = 512

// members returns the set's members in the order redis-server 7.0 gives
// them for a set it keeps as an intset (at most intsetMax integers, each
// in its canonical form): ascending. Any other set is a hash table for
// redis-server, whose order depends on its hash seed; here it is the map's.
func (s set) members() []string {
	ms := make([]string, 0, len(s))
	ints := len(s) <= intsetMax
	for m := range s {
		ms = append(ms, m)
		if ints {
			_, ints = intMember(m)
		}
	}
	if ints {
		slices.SortFunc(ms, func(a, b string) int {
			x, _ := intMember(a)
			y, _ := intMember(b)
			return cmp.Compare(x, y)
		})
	}
	return ms
}

// intMember reports whether m is an integer as redis-server's string2ll
// reads one (no sign but '-', no leading zero, within int64): a member an
// intset holds.
func intMember(m string) (int64, bool) {
	if len(m) == 0 || len(m) > 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(m, 10, 64)
	if err != nil {
		return 0, false
	}
	var num [20]byte
	return n, string(strconv.AppendInt(num[:0], n, 10)) == m
}

func cmdSRem(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	s, wrong := getObj[set](d, argv[1])
	if wrong {
		return appendError(out, errWrongTyp), 0
	}
	removed := 0
	for _, m := range argv[2:] {
		if _, ok := s[string(m)]; ok {
			delete(s, string(m))
			removed++
		}
	}
	if removed > 0 {
		if len(s) == 0 {
			d.delete(argv[1])
		} else {
			d.touch(argv[1])
		}
		d.propagate(argv)
	}
	return appendInt(out, int64(removed)), 0
}

func cmdHGetAll(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	h, wrong := getObj[*hash](d, argv[1])
	switch {
	case wrong:
		return appendError(out, errWrongTyp), 0
	case h == nil:
		return appendArray(out, 0), 0
	}
	out = appendArray(out, 2*len(h.fields))
	for _, f := range h.fields {
		out = appendBulkString(out, f)
		out = appendBulkString(out, h.m[f])
	}
	return out, 0
}

// sorted returns the members of z in order (score, then member).
func (z *zset) sorted() []zentry {
	es := make([]zentry, 0, len(z.members))
	for m, e := range z.members {
		es = append(es, zentry{score: e.score, member: m})
	}
	slices.SortFunc(es, func(a, b zentry) int {
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		return strings.Compare(a.member, b.member)
	})
	return es
}

// ZRANGE's kinds of range.
const (
	zrRank = iota
	zrScore
	zrLex
)

// scoreBound is one end of a BYSCORE range; lexBound of a BYLEX one.
type scoreBound struct {
	v   float64
	exc bool
}

type lexBound struct {
	s        string
	exc      bool
	inf, neg bool // "+" (inf) or "-" (inf and neg)
}

// cmdZRange is ZRANGE as Redis 7.0's zrangeGenericCommand: the options
// first, then their conflicts, then the range, then the key.
func cmdZRange(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	kind, rev, withScores := zrRank, false, false
	dirSet, kindSet := false, false
	offset, limit := int64(0), int64(-1)
	for j := 4; j < len(argv); j++ {
		left := len(argv) - j - 1
		switch {
		case eq(argv[j], "withscores"):
			withScores = true
		case eq(argv[j], "limit") && left >= 2:
			var ok bool
			if offset, ok = parseInt(argv[j+1]); !ok {
				return appendError(out, errNotInt), 0
			}
			if limit, ok = parseInt(argv[j+2]); !ok {
				return appendError(out, errNotInt), 0
			}
			j += 2
		case !dirSet && eq(argv[j], "rev"):
			rev, dirSet = true, true
		case !kindSet && eq(argv[j], "bylex"):
			kind, kindSet = zrLex, true
		case !kindSet && eq(argv[j], "byscore"):
			kind, kindSet = zrScore, true
		default:
			return appendError(out, errSyntax), 0
		}
	}
	if limit != -1 && kind == zrRank {
		return appendError(out, "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"), 0
	}
	if withScores && kind == zrLex {
		return appendError(out, "ERR syntax error, WITHSCORES not supported in combination with BYLEX"), 0
	}
	lo, hi := argv[2], argv[3]
	if rev && kind != zrRank {
		lo, hi = hi, lo // given as max, min
	}
	var start, end int64
	var smin, smax scoreBound
	var lmin, lmax lexBound
	switch kind {
	case zrRank:
		var ok1, ok2 bool
		start, ok1 = parseInt(lo)
		if !ok1 {
			return appendError(out, errNotInt), 0
		}
		end, ok2 = parseInt(hi)
		if !ok2 {
			return appendError(out, errNotInt), 0
		}
	case zrScore:
		var ok1, ok2 bool
		smin, ok1 = parseScoreBound(lo)
		smax, ok2 = parseScoreBound(hi)
		if !ok1 || !ok2 {
			return appendError(out, "ERR min or max is not a float"), 0
		}
	case zrLex:
		var ok1, ok2 bool
		lmin, ok1 = parseLexBound(lo)
		lmax, ok2 = parseLexBound(hi)
		if !ok1 || !ok2 {
			return appendError(out, "ERR min or max not valid string range item"), 0
		}
	}
	z, wrong := getObj[*zset](d, argv[1])
	switch {
	case wrong:
		return appendError(out, errWrongTyp), 0
	case z == nil:
		return appendArray(out, 0), 0
	}
	es := z.sorted()
	if rev {
		slices.Reverse(es)
	}
	n := int64(len(es))
	var picked []zentry
	switch kind {
	case zrRank:
		if start < 0 {
			start += n
		}
		if end < 0 {
			end += n
		}
		start = max(start, 0)
		if start > end || start >= n {
			return appendArray(out, 0), 0
		}
		end = min(end, n-1)
		picked = es[start : end+1]
	default:
		if offset > 0 && offset >= n {
			return appendArray(out, 0), 0
		}
		in := func(e zentry) bool {
			if kind == zrScore {
				return smin.below(e.score) && smax.above(e.score)
			}
			return lmin.below(e.member) && lmax.above(e.member)
		}
		for _, e := range es {
			if !in(e) {
				continue
			}
			if offset != 0 { // a negative offset skips everything, as Redis's loop does
				offset--
				continue
			}
			if limit == 0 {
				break
			}
			limit--
			picked = append(picked, e)
		}
	}
	if withScores {
		out = appendArray(out, 2*len(picked))
	} else {
		out = appendArray(out, len(picked))
	}
	for _, e := range picked {
		out = appendBulkString(out, e.member)
		if withScores {
			out = appendScore(out, e.score)
		}
	}
	return out, 0
}

// parseScoreBound reads a BYSCORE bound as zslParseRange does: an
// optional '(' (exclusive), then strtod over the rest, NaN refused.
func parseScoreBound(b []byte) (scoreBound, bool) {
	var r scoreBound
	if len(b) > 0 && b[0] == '(' {
		r.exc, b = true, b[1:]
	}
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++ // strtod skips leading white space
	}
	if i == len(b) {
		return r, false
	}
	body := b[i:]
	if f, ok := parseScore(body); ok {
		r.v = f
		return r, true
	}
	// What parseScore refuses and strtod takes: an overflow (to ±inf) or
	// an underflow (to ±0).
	s := string(body)
	if strings.ContainsRune(s, '_') {
		return r, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f) {
		return r, false
	}
	r.v = f
	return r, true
}

// below reports whether v is past the range's lower bound r; above,
// before its upper bound.
func (r scoreBound) below(v float64) bool {
	if r.exc {
		return v > r.v
	}
	return v >= r.v
}

func (r scoreBound) above(v float64) bool {
	if r.exc {
		return v < r.v
	}
	return v <= r.v
}

// parseLexBound reads a BYLEX bound: "-", "+", "[member" or "(member".
func parseLexBound(b []byte) (lexBound, bool) {
	switch {
	case len(b) == 1 && b[0] == '-':
		return lexBound{inf: true, neg: true}, true
	case len(b) == 1 && b[0] == '+':
		return lexBound{inf: true}, true
	case len(b) > 0 && b[0] == '[':
		return lexBound{s: string(b[1:])}, true
	case len(b) > 0 && b[0] == '(':
		return lexBound{s: string(b[1:]), exc: true}, true
	}
	return lexBound{}, false
}

func (r lexBound) below(m string) bool {
	switch {
	case r.inf:
		return r.neg
	case r.exc:
		return m > r.s
	}
	return m >= r.s
}

func (r lexBound) above(m string) bool {
	switch {
	case r.inf:
		return !r.neg
	case r.exc:
		return m < r.s
	}
	return m <= r.s
}

// propagateSet propagates a SET that wrote, as redis-server 7.0 does:
// with a time to live, as SET key value PXAT ms (its other options go);
// else as sent, without its GET options.
func propagateSet(d *db, argv [][]byte, flags int, expire bool, at int64) {
	switch {
	case expire:
		d.propagate([][]byte{[]byte("SET"), argv[1], argv[2], []byte("PXAT"), strconv.AppendInt(nil, at, 10)})
	case flags&setGet != 0:
		op := make([][]byte, 0, len(argv))
		for j, a := range argv {
			if j < 3 || !eq(a, "get") {
				op = append(op, a)
			}
		}
		d.propagate(op)
	default:
		d.propagate(argv)
	}
}

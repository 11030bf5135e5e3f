"""The command language: iproute2 / bpftool / ethtool / pktgen lines -> command values.

Only syntax is checked here (what the real tool's own parser rejects, with its wording);
whether the kernel accepts a command is the engine's business. ``parse`` raises
:class:`~xdptui.model.errors.UsageError` with a message naming the offending word.
"""

from __future__ import annotations

import shlex

from xdptui.model.catalog import is_object_program
from xdptui.model.commands import (
    BondSetOptions,
    Command,
    Help,
    LinkSetCarrier,
    LinkSetMaster,
    LinkSetMtu,
    LinkSetState,
    LinkShow,
    MapDelete,
    MapLookup,
    MapShow,
    MapUpdate,
    NetShow,
    Pktgen,
    ProgShow,
    SetChannels,
    SetReader,
    SetRings,
    SetWriter,
    ShowStats,
    XdpSet,
)
from xdptui.model.errors import Errno, UsageError
from xdptui.model.limits import MAX_TABLE_ENTRIES, RATE_MAX_BPS, RATE_MAX_PPS
from xdptui.model.topology import BOND_MODES, XMIT_HASH_POLICIES
from xdptui.model.units import Rate, UnitError, parse_rate

XDP_KEYWORDS = ("xdp", "xdpgeneric", "xdpdrv", "xdpoffload")
INCOMPLETE = 'Command line is not complete. Try option "help"'

COMMAND_HELP: tuple[tuple[str, str], ...] = (
    (
        "ip [-force] link set dev DEV xdp|xdpgeneric|xdpdrv|xdpoffload obj PROG [param K=V ...]",
        "attach (or with -force replace) an XDP program",
    ),
    ("ip link set dev DEV xdp off", "detach the program (mode keyword picks the mode)"),
    ("ip link set dev DEV up|down", "change the administrative state"),
    ("ip link set dev DEV carrier on|off", "plug or pull the cable (carrier only)"),
    ("ip link set dev DEV mtu N", "change the MTU"),
    ("ip link set dev DEV master BOND | nomaster", "enslave to / release from a bond"),
    ("ip link set dev BOND type bond mode MODE [xmit_hash_policy POLICY]", "bond options"),
    ("ip [-j] [-s] [-d] link show [dev DEV]", "show devices, XDP programs and statistics"),
    (
        "bpftool map update name MAP key K value DEV [egress PROG] [any|noexist|exist]",
        "set a devmap entry",
    ),
    (
        "bpftool map update name MAP key CPU value qsize N [prog PROG]",
        "set a cpumap entry: the CPU's ring size (0 deletes) and its program",
    ),
    ("bpftool map delete name MAP key K", "delete a devmap or cpumap entry"),
    (
        "bpftool map update {name MAP | id N} key [hex] BYTES value [hex] BYTES [flags]",
        "set an element of a loaded object's map (bytes as bpftool parses them)",
    ),
    (
        "bpftool map update {name MAP | id N} key [hex] BYTES value {id N | name MAP}",
        "put an inner map in a slot of an array or hash of maps",
    ),
    ("bpftool [-j] map {lookup | delete} {name MAP | id N} key [hex] BYTES", "an element"),
    ("bpftool [-j] map show | dump name MAP", "list maps / a map's entries"),
    ("bpftool [-j] prog show", "list the loaded XDP programs"),
    ("bpftool [-j] net", "list the XDP programs attached to each device"),
    ("ethtool -L DEV combined N", "number of channels (RX/TX queue pairs)"),
    ("ethtool -G DEV rx N [tx N]", "ring sizes"),
    ("ethtool -S DEV", "driver statistics"),
    ("pktgen DEV rate R [size S] [flows F] [gso G] | pktgen DEV stop", "retune traffic into DEV"),
    ("reader TAP rate R | reader TAP stop", "how fast userspace reads a tap (xdptui's own)"),
    (
        "writer XSK [batch N] [rate R] | writer XSK stop",
        "an AF_XDP socket's writer: descriptors per sendto, its pace (xdptui's own)",
    ),
    ("help [COMMAND]", "this list, or the lines of one command"),
)
"""Every command's synopsis: ``help`` prints these and completion takes its first words."""

TOOLS: tuple[str, ...] = tuple(dict.fromkeys(synopsis.split()[0] for synopsis, _ in COMMAND_HELP))
"""The command words the parser accepts, in :data:`COMMAND_HELP` order."""


def help_text(topic: str | None = None) -> str:
    """``help`` / ``help ip``: the synopses from :data:`COMMAND_HELP`, aligned."""
    rows = [r for r in COMMAND_HELP if topic is None or r[0].split()[0] == topic]
    width = max(len(synopsis) for synopsis, _ in rows)
    if width > 72:
        return "\n".join(f"{synopsis}\n    {what}" for synopsis, what in rows)
    return "\n".join(f"{synopsis:<{width}}  {what}" for synopsis, what in rows)


def _int(word: str, what: str) -> int:
    try:
        return int(word, 0)
    except ValueError:
        raise UsageError(f'Error: argument "{word}" is wrong: {what} must be an integer') from None


class _Words:
    def __init__(self, words: list[str]) -> None:
        self.words = words
        self.i = 0

    def more(self) -> bool:
        return self.i < len(self.words)

    def peek(self) -> str | None:
        return self.words[self.i] if self.more() else None

    def next(self) -> str:
        if not self.more():
            raise UsageError(INCOMPLETE)
        word = self.words[self.i]
        self.i += 1
        return word


def parse(line: str) -> Command:
    """Parse one command line."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError as exc:
        raise UsageError(f"Error: cannot parse command line: {exc}") from None
    if not words:
        raise UsageError("Error: empty command; try one of: " + ", ".join(TOOLS))
    tool, rest = words[0], _Words(words[1:])
    if tool == "ip":
        return _parse_ip(rest)
    if tool == "bpftool":
        return _parse_bpftool(rest)
    if tool == "ethtool":
        return _parse_ethtool(rest)
    if tool == "pktgen":
        return _parse_pktgen(rest)
    if tool == "reader":
        return _parse_reader(rest)
    if tool == "writer":
        return _parse_writer(rest)
    if tool == "help":
        topic = rest.next() if rest.more() else None
        if topic is not None and topic not in TOOLS:
            from xdptui.model.catalog import did_you_mean

            raise UsageError(
                f'Error: no help on "{topic}"{did_you_mean(topic, TOOLS)}; '
                f"valid: {', '.join(TOOLS)}",
                Errno.EINVAL,
            )
        if rest.more():
            raise UsageError(f'Error: help takes one command word, not "{rest.next()}"')
        return Help(topic)
    from xdptui.model.catalog import did_you_mean

    raise UsageError(
        f'Error: unknown command "{tool}"{did_you_mean(tool, TOOLS)}; '
        f"xdptui speaks: {', '.join(TOOLS)} (type help)",
        Errno.EINVAL,
    )


def validate(line: str) -> str | None:
    """For the topology loader: None if ``line`` parses, else the message."""
    try:
        parse(line)
    except UsageError as exc:
        return str(exc)
    return None


def programs_named(line: str) -> tuple[str, ...]:
    """The programs a command line would load (``obj PROG``, ``egress PROG``), built-in or
    ``file.py:function``; () for a line that loads none or does not parse."""
    try:
        command = parse(line)
    except UsageError:
        return ()
    if isinstance(command, XdpSet) and command.prog is not None:
        return (command.prog,)
    if isinstance(command, MapUpdate) and command.egress is not None:
        return (command.egress,)
    return ()


def with_program_replaced(line: str, program: str, replacement: str) -> str:
    """``line`` with the word ``program`` after ``obj`` / ``egress`` replaced (re-quoted as a
    shell would need it; comments dropped)."""
    words = shlex.split(line, comments=True)
    for i in range(1, len(words)):
        if words[i] == program and words[i - 1] in ("obj", "egress"):
            words[i] = replacement
    return shlex.join(words)


def _parse_ip(w: _Words) -> Command:
    force = stats = details = as_json = False
    while (word := w.peek()) is not None and word.startswith("-"):
        w.next()
        if word == "-force":
            force = True
        elif word in ("-s", "-stats", "-statistics"):
            stats = True
        elif word in ("-d", "-details"):
            details = True
        elif word in ("-j", "-json"):
            as_json = True
        elif word in ("-p", "-pretty"):
            continue
        elif word in ("-h", "-help"):
            return Help("ip")
        else:
            raise UsageError(f'Option "{word}" is unknown, try "ip -help".')
    obj = w.next()
    if obj == "help":
        return Help("ip")
    if obj not in ("link", "l"):
        raise UsageError(f'Object "{obj}" is unknown, try "ip help". (xdptui models ip link)')
    verb = w.next() if w.more() else "show"
    if verb == "help":
        return Help("ip")
    if verb in ("show", "list", "sh", "ls"):
        dev = None
        if w.more():
            word = w.next()
            dev = w.next() if word == "dev" else word
        return LinkShow(dev, stats, details, as_json)
    if verb != "set":
        raise UsageError(f'Command "{verb}" is unknown, try "ip link help".')  # that is help ip
    word = w.next()
    dev = w.next() if word == "dev" else word
    if not w.more():
        raise UsageError(INCOMPLETE)
    word = w.next()
    if word in ("up", "down"):
        _no_garbage(w, dev)
        return LinkSetState(dev, word == "up")
    if word == "mtu":
        mtu = _int(w.next(), "mtu")
        _no_garbage(w, dev)
        return LinkSetMtu(dev, mtu)
    if word == "carrier":
        state = w.next()
        if state not in ("on", "off"):
            raise UsageError(f'Error: argument of "carrier" must be "on" or "off", not "{state}"')
        _no_garbage(w, dev)
        return LinkSetCarrier(dev, state == "on")
    if word == "master":
        master = w.next()
        _no_garbage(w, dev)
        return LinkSetMaster(dev, master)
    if word == "nomaster":
        _no_garbage(w, dev)
        return LinkSetMaster(dev, None)
    if word in XDP_KEYWORDS:
        return _parse_xdp(w, dev, word, force)
    if word == "type":
        kind = w.next()
        if kind != "bond":
            raise UsageError(f'Error: type "{kind}" can not be changed here (xdptui: bond only)')
        return _parse_bond_opts(w, dev)
    raise UsageError(f'Error: either "dev" is duplicate, or "{word}" is a garbage.')


def _no_garbage(w: _Words, dev: str) -> None:
    if w.more():
        raise UsageError(f'Error: either "dev" is duplicate, or "{w.next()}" is a garbage.')


def _parse_xdp(w: _Words, dev: str, keyword: str, force: bool) -> XdpSet:
    """iproute2 ``ip/iplink_xdp.c: xdp_parse``."""
    word = w.next()
    if word in ("off", "none"):
        _no_garbage(w, dev)
        return XdpSet(dev, keyword, None, (), force)
    if word not in ("obj", "object", "pinned", "fd"):
        raise UsageError(f'Error: "{word}" is not a valid {keyword} argument; use obj PROG or off')
    prog = w.next()
    params: list[tuple[str, str]] = []
    while w.more():
        word = w.next()
        if word in ("sec", "section", "program", "prog"):
            name = w.next()  # the ELF section or function name: kept for a real object
            if is_object_program(prog):
                path = prog if prog.endswith(".o") else prog.rpartition(":")[0]
                prog = f"{path}:{name}"
        elif word == "param":
            kv = w.next()
            key, sep, value = kv.partition("=")
            if not sep or not key:
                raise UsageError(f'Error: param "{kv}" must be KEY=VALUE')
            params.append((key, value))
        elif word == "verbose":
            continue
        else:
            raise UsageError(f'Error: either "dev" is duplicate, or "{word}" is a garbage.')
    return XdpSet(dev, keyword, prog, tuple(params), force)


def _parse_bond_opts(w: _Words, dev: str) -> BondSetOptions:
    mode = policy = None
    while w.more():
        word = w.next()
        if word == "mode":
            mode = w.next()
            if mode not in BOND_MODES and not (mode.isdigit() and int(mode) < len(BOND_MODES)):
                raise UsageError(
                    f'Error: invalid bond mode "{mode}"; valid: {", ".join(BOND_MODES)} (or 0-6)'
                )
            if mode.isdigit():
                mode = BOND_MODES[int(mode)]
        elif word == "xmit_hash_policy":
            policy = w.next()
            if policy not in XMIT_HASH_POLICIES:
                raise UsageError(
                    f'Error: invalid xmit_hash_policy "{policy}"; '
                    f"valid: {', '.join(XMIT_HASH_POLICIES)}"
                )
        else:
            raise UsageError(f'Error: either "dev" is duplicate, or "{word}" is a garbage.')
    if mode is None and policy is None:
        raise UsageError(INCOMPLETE)
    return BondSetOptions(dev, mode, policy)


def _parse_bpftool(w: _Words) -> Command:
    as_json = False
    while (word := w.peek()) is not None and word.startswith("-"):
        w.next()
        if word in ("-j", "--json", "-p", "--pretty"):
            as_json = True
        elif word in ("-h", "--help"):
            return Help("bpftool")
        else:
            raise UsageError(f"Error: unrecognized option '{word}' (xdptui: -j, -p)")
    obj = w.next()
    if obj == "help" or w.peek() == "help":
        return Help("bpftool")
    if obj in ("prog", "net"):
        verb = w.next() if w.more() else "show"
        if verb not in ("show", "list"):
            raise UsageError(f"Error: unrecognized command '{verb}' (xdptui: {obj} show)")
        if w.more():
            raise UsageError(f"Error: unexpected '{w.next()}'")
        return ProgShow(as_json) if obj == "prog" else NetShow(as_json)
    if obj != "map":
        raise UsageError(f"Error: unrecognized object '{obj}' (xdptui: map, prog, net)")
    verb = w.next() if w.more() else "show"
    if verb in ("show", "list"):
        name, map_id = _map_ref(w) if w.more() else (None, None)
        return MapShow(name, dump=False, json=as_json, map_id=map_id)
    if verb == "dump":
        name, map_id = _map_ref(w)
        return MapShow(name, dump=True, json=as_json, map_id=map_id)
    if verb in ("update", "delete", "lookup"):
        name, map_id = _map_ref(w)
        if w.next() != "key":
            raise UsageError("Error: expected 'key'")
        key_words = _bytes_words(w, ("value",))
        key_bytes = _parse_bytes(key_words, "key")
        if verb == "lookup":
            if w.more():
                raise UsageError(f"Error: unexpected '{w.next()}'")
            return MapLookup(name, map_id, key_bytes, as_json)
        single = len(key_words) == 1 and key_words[0] != "hex"
        key = _int(key_words[0], "key") if single else 0
        raw_key = None if single and map_id is None else key_bytes
        if verb == "delete":
            if w.more():
                raise UsageError(f"Error: unexpected '{w.next()}'")
            return MapDelete(name or "", key, map_id, raw_key)
        if w.next() != "value":
            raise UsageError("Error: expected 'value'")
        value_words = _bytes_words(w, ("egress", "any", "noexist", "exist"))
        dev = value_words[0] if value_words else ""
        value_bytes = None
        value_map = None
        qsize: int | None = None
        cpu_prog: str | None = None
        if value_words and value_words[0] == "qsize":
            # a cpumap's struct bpf_cpumap_val (xdptui's form): qsize N [prog PROG]
            if len(value_words) < 2:
                raise UsageError("Error: expected qsize N (the ring size, 0 deletes)")
            qsize = _int(value_words[1], "qsize")
            rest = value_words[2:]
            if rest and (rest[0] != "prog" or len(rest) != 2):
                raise UsageError(f"Error: unexpected '{rest[0]}' (expected prog PROG)")
            cpu_prog = rest[1] if rest else None
            dev = ""
        elif value_words and (value_words[0] == "hex" or _is_byte(value_words[0])):
            value_bytes = _parse_bytes(value_words, "value")
            raw_key = key_bytes
        elif value_words == [value_words[0]] and value_words[0] in MAP_HANDLES:
            raise UsageError("Error: not enough value arguments for map in map")
        elif value_words[0] in MAP_HANDLES:
            # parse_elem for a map-in-map: the value is a map (bpftool's map_parse_fd)
            if len(value_words) != 2:
                raise UsageError(f"Error: unexpected '{value_words[2]}'")
            value_map = (value_words[0], value_words[1])
            if value_words[0] == "id":
                _int(value_words[1], "id")
            raw_key = key_bytes
        elif len(value_words) != 1:
            raise UsageError(f"Error: unexpected '{value_words[1] if value_words else ''}'")
        egress = None
        flags = 0
        while w.more():
            word = w.next()
            if word == "egress":
                egress = w.next()
            elif word in ("any", "noexist", "exist"):
                flags = ("any", "noexist", "exist").index(word)
            else:
                raise UsageError(
                    f"Error: unexpected '{word}' (expected egress PROG or any|noexist|exist)"
                )
        return MapUpdate(
            name or "",
            key,
            dev,
            egress,
            flags,
            map_id,
            raw_key,
            value_bytes,
            value_map,
            qsize,
            cpu_prog,
        )
    raise UsageError(f"Error: unrecognized command '{verb}' (show, dump, lookup, update, delete)")


MAP_HANDLES = ("id", "name", "pinned")  # bpftool's MAP := { id MAP_ID | pinned FILE | name NAME }


def _bytes_words(w: _Words, stops: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    while w.more() and w.peek() not in stops:
        out.append(w.next())
    if not out:
        raise UsageError("Error: no bytes given")
    return out


def _is_byte(word: str) -> bool:
    try:
        return 0 <= int(word, 0) <= 255
    except ValueError:
        return False


def parse_bytes(text: str, what: str) -> bytes:
    """The bytes ``bpftool map update ... key TEXT`` makes of ``TEXT`` (``hex 35 00``,
    ``0x35 0``, ``53 0``); a :class:`UsageError` in bpftool's words otherwise."""
    words = text.split()
    if not words:
        raise UsageError("Error: no bytes given")
    return _parse_bytes(words, what)


def _parse_bytes(words: list[str], what: str) -> bytes:
    """bpftool's ``parse_bytes``: each word a byte (``0x0a``, ``10``, ``012``), or after
    ``hex`` hexadecimal digits (``0a``, or several bytes run together: ``0a000000``)."""
    out = bytearray()
    if words[0] == "hex":
        for word in words[1:]:
            if len(word) % 2 and len(word) > 2:
                raise UsageError(f"Error: error parsing {what}: odd number of hex digits '{word}'")
            try:
                out += bytes.fromhex(word.zfill(2))
            except ValueError:
                raise UsageError(f"Error: error parsing byte: {word}") from None
        return bytes(out)
    for word in words:
        if not _is_byte(word):
            raise UsageError(f"Error: error parsing byte: {word}")
        out.append(int(word, 0))
    return bytes(out)


def _map_ref(w: _Words) -> tuple[str | None, int | None]:
    """``name MAP`` or ``id N``."""
    word = w.peek()
    if word == "id":
        w.next()
        return None, _int(w.next(), "id")
    return _map_name(w), None


def _map_name(w: _Words) -> str:
    word = w.next()
    if word != "name":
        raise UsageError(f"Error: expected 'name MAP', got '{word}'")
    return w.next()


def _parse_ethtool(w: _Words) -> Command:
    flag = w.next()
    if flag in ("-h", "--help"):
        return Help("ethtool")
    if flag in ("-L", "--set-channels"):
        dev = w.next()
        combined = None
        while w.more():
            word = w.next()
            if word == "combined":
                combined = _int(w.next(), "combined")
            elif word in ("rx", "tx", "other"):
                raise UsageError(f"ethtool: {word} channels: xdptui models combined channels only")
            else:
                raise UsageError(f'ethtool: bad command line argument(s): "{word}"')
        if combined is None:
            raise UsageError("ethtool: no channel parameters changed, aborting")
        return SetChannels(dev, combined)
    if flag in ("-G", "--set-ring"):
        dev = w.next()
        rx = tx = None
        while w.more():
            word = w.next()
            if word == "rx":
                rx = _int(w.next(), "rx")
            elif word == "tx":
                tx = _int(w.next(), "tx")
            else:
                raise UsageError(f'ethtool: bad command line argument(s): "{word}"')
        if rx is None and tx is None:
            raise UsageError("ethtool: no ring parameters changed, aborting")
        return SetRings(dev, rx, tx)
    if flag in ("-S", "--statistics"):
        return ShowStats(w.next())
    raise UsageError(f'ethtool: bad command line argument(s): "{flag}" (xdptui: -L, -G, -S)')


def _parse_pktgen(w: _Words) -> Pktgen:
    dev = w.next()
    if w.peek() == "stop":
        w.next()
        return Pktgen(dev, stop=True)
    rate = size = flows = None
    gso: float | None = None
    while w.more():
        word = w.next()
        if word == "rate":
            rate = _rate(w.next(), "pktgen")
        elif word in ("size", "pkt_size"):
            size = _int(w.next(), "size")
            if not 60 <= size <= 9600:
                raise UsageError("pktgen: size must be 60..9600 bytes")
        elif word == "flows":
            flows = _int(w.next(), "flows")
            if not 1 <= flows <= MAX_TABLE_ENTRIES:
                raise UsageError(f"pktgen: flows must be 1..{MAX_TABLE_ENTRIES} (the flow table)")
        elif word == "gso":
            value = w.next()
            try:
                gso = float(value)
            except ValueError:
                raise UsageError(f'pktgen: gso must be a share 0..1, not "{value}"') from None
            if not 0.0 <= gso <= 1.0:
                raise UsageError("pktgen: gso must be a share 0..1")
        else:
            raise UsageError(f'pktgen: unknown parameter "{word}" (rate, size, flows, gso, stop)')
    if rate is None and size is None and flows is None and gso is None:
        raise UsageError("pktgen: nothing to change (rate R [size S] [flows F] [gso G] | stop)")
    return Pktgen(dev, False, rate, size, flows, gso)


def _rate(value: str, tool: str) -> Rate:
    """A rate word: > 0 and at most what a topology may ask for (``xdptui.model.limits``)."""
    try:
        rate = parse_rate(value)
    except UnitError as exc:
        raise UsageError(f"{tool}: rate: {exc}") from None
    if rate.kind in ("line", "captured"):
        return rate
    top = RATE_MAX_PPS if rate.kind == "pps" else RATE_MAX_BPS
    if not 0 < rate.value <= top:
        largest = f"{top / 1e9:.0f}G{rate.kind}"
        raise UsageError(f'{tool}: rate "{value}" is out of range; valid: above 0, up to {largest}')
    return rate


def _parse_writer(w: _Words) -> SetWriter:
    sock = w.next()
    if w.more() and w.peek() == "stop":
        w.next()
        return SetWriter(sock, stop=True)
    batch: int | None = None
    rate: Rate | None = None
    if not w.more():
        raise UsageError('writer: expected "batch N", "rate R" or "stop"')
    while w.more():
        word = w.next()
        if word == "batch" and batch is None:
            text = w.next()
            if not text.isdigit() or not 1 <= int(text) <= 4096:
                raise UsageError(f'writer: batch "{text}" is not valid; valid: 1..4096')
            batch = int(text)
        elif word == "rate" and rate is None:
            rate = _rate(w.next(), "writer")
            if rate.kind != "pps":
                raise UsageError("writer: give a rate in pps (e.g. 1Mpps)")
        else:
            raise UsageError(f'writer: expected "batch N" or "rate R", not "{word}"')
    return SetWriter(sock, batch, rate)


def _parse_reader(w: _Words) -> SetReader:
    dev = w.next()
    word = w.next()
    if word == "stop":
        return SetReader(dev, None)
    if word != "rate":
        raise UsageError(f'reader: expected "rate R" or "stop", not "{word}"')
    rate = _rate(w.next(), "reader")
    if rate.kind in ("line", "captured"):
        raise UsageError("reader: give a rate in pps (e.g. 500Kpps)")
    return SetReader(dev, rate)

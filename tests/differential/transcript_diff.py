"""Comparing two normalised transcripts of diff_test, and printing the first differing steps
side by side: each step record as short lines (a frame's header on one line, each Stat on three
more), aligned with difflib and wrapped to the column width.
"""

import copy
import difflib
import json


def comparable(rec):
    skip = ("step", "args", "expected")
    if "pinned_ok" in rec:        # compared with its pinned outcome, not with the other server
        skip += ("frames",)
    if "displaced_pinned" in rec:  # which connection a reconnect closes is pinned per server
        skip += ("displaced",)
    return {k: v for k, v in rec.items() if k not in skip}


def render(rec):
    """Lines for one step record, for the side-by-side view."""
    lines = []
    if "pinned_ok" in rec:
        lines.append("  pinned outcome %s; expected:" % ("met" if rec["pinned_ok"] else "NOT MET"))
        for f in rec["expected"]:
            lines += pretty(f, "    ")
        lines.append("  got:")
    for f in rec["frames"]:
        lines += pretty(f, "  ")
    for k, v in sorted(rec.get("displaced", {}).items()):
        lines.append("  displaced %s:" % k)
        for f in v:
            lines += pretty(f, "    ")
    for k, v in sorted(rec.get("notifications", {}).items()):
        lines.append("  later on %s:" % k)
        for f in v:
            lines += pretty(f, "    ")
    return lines


STAT_LINES = (("czxid", "mzxid", "pzxid"), ("ctime", "mtime", "ephemeralOwner"),
              ("version", "cversion", "aversion", "dataLength", "numChildren"))


def pretty(f, indent):
    """A frame as short lines: the header on one line, each Stat on three more."""
    f = copy.deepcopy(f)
    stats = []

    def pull_stats(v, where):
        if isinstance(v, dict):
            for k in list(v):
                if k == "stat" and isinstance(v[k], dict):
                    stats.append((where, v.pop(k)))
                else:
                    pull_stats(v[k], where + "." + k if where else k)
        elif isinstance(v, list):
            for i, x in enumerate(v):
                pull_stats(x, "%s[%d]" % (where, i))

    pull_stats(f, "")
    dump = lambda v: json.dumps(v, ensure_ascii=True, sort_keys=True)
    if "connectResponse" in f:
        line = "connected " + dump(f["connectResponse"])
    elif "event" in f and f.get("xid") == -1:
        ev = f.pop("event")
        line = "EVENT %s %s (%s) zxid=%s" % (ev.get("type"), ev.get("path"), ev.get("state"),
                                            f.pop("zxid", None))
        f.pop("xid", None)
        if f.pop("err", "0 OK") != "0 OK":
            line += " err!=0"
        if f:
            line += " " + dump(f)
    elif "xid" in f:
        line = "xid=%s zxid=%s err=%s" % (f.pop("xid"), f.pop("zxid", None), f.pop("err", None))
        body = f.pop("body", "absent")
        if body is not None and body != "absent" and body != {}:
            line += " " + dump(body)
        if f:
            line += " " + dump(f)
    else:
        line = dump(f)
    out = [indent + line]
    for where, st in stats:
        out.append(indent + "  stat%s:" % ("" if where in ("body", "") else "(%s)" % where))
        for keys in STAT_LINES:
            out.append(indent + "    " + " ".join("%s=%s" % (k, st.get(k)) for k in keys))
        if "PROBLEMS" in st:
            out.append(indent + "    PROBLEMS: %s" % st["PROBLEMS"])
    return out


def side_by_side(left, right, width):
    out = []
    sm = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        n = max(i2 - i1, j2 - j1)
        for k in range(n):
            a = left[i1 + k] if i1 + k < i2 else ""
            b = right[j1 + k] if j1 + k < j2 else ""
            mark = " " if tag == "equal" else ("<" if not b else (">" if not a else "|"))
            out.extend(wrap_pair(a, b, mark, width))
    return out


def wrap_pair(a, b, mark, width):
    rows = []
    while True:
        rows.append("%-*s %s %s" % (width, a[:width], mark, b[:width]))
        a, b = a[width:], b[width:]
        if not a and not b:
            return rows
        a, b = ("  " + a if a else a), ("  " + b if b else b)


def compare(ta, tb, name_a, name_b, max_shown, width):
    diffs = [i for i in range(max(len(ta), len(tb)))
             if i >= len(ta) or i >= len(tb) or comparable(ta[i]) != comparable(tb[i])]
    if not diffs:
        return 0
    print("\nMISMATCH: %d of %d steps differ between %s (left) and %s (right)."
          % (len(diffs), len(ta), name_a, name_b))
    print("Differing steps: %s" % ", ".join(str(i) for i in diffs[:50])
          + (" ..." if len(diffs) > 50 else ""))
    for i in diffs[:max_shown]:
        ra, rb = ta[i], tb[i]
        print("\n" + "=" * (2 * width + 3))
        print("step %d: %s %s %s" % (i, ra["conn"], ra["op"], ra["args"]))
        if i > 0:
            print("  (previous step %d: %s %s)" % (i - 1, ta[i - 1]["conn"], ta[i - 1]["op"]))
        print("%-*s   %s" % (width, "--- " + name_a, "--- " + name_b))
        for line in side_by_side(render(ra), render(rb), width):
            print(line)
    return 1


"""Session 28: python3 wgmma_hazards.py FILE.sass (cuobjdump -sass of a cubin). Linear scan of SASS: for each HGMMA group (closed by gsb0), flag writes to its A registers and any access to
its accumulators before a WARPGROUP.DEPBAR retires it. Branch structure ignored (straight-line loop bodies)."""
import re, sys
for fn in open(sys.argv[1]).read().split('Function : ')[1:]:
    name = fn.split('\n')[0].strip()[-40:]
    ins = []
    for line in fn.split('\n'):
        m = re.match(r'\s*/\*([0-9a-f]{4})\*/\s+(.*?);', line)
        if m: ins.append((int(m.group(1), 16), m.group(2).strip()))
    pending, cur, hazards = [], {'a': set(), 'acc': set()}, []
    for a, s in ins:
        mm = re.match(r'HGMMA\.64x(\d+)x16\S*\s+(R\d+|RZ),\s+(R\d+|gdesc)', s)
        if mm:
            n = int(mm.group(1))
            if mm.group(2) != 'RZ':
                acc = int(mm.group(2)[1:]); cur['acc'].update(range(acc, acc + n // 2))
            if mm.group(3).startswith('R'):
                r = int(mm.group(3)[1:]); cur['a'].update(range(r, r + 4))
            if 'gsb0' in s:
                pending.append(cur); cur = {'a': set(), 'acc': set()}
            continue
        md = re.match(r'WARPGROUP\.DEPBAR\.LE gsb0, 0x(\d+)', s)
        if md:
            keep = int(md.group(1)); pending = pending[len(pending) - keep:] if keep else []
            continue
        regs = [int(x) for x in re.findall(r'\bR(\d+)\b', s)]
        if not regs or not pending: continue
        dst = regs[0] if not re.match(r'(@!?U?P\w+\s+)?(ST|BAR|BRA|ISETP|FSETP|RED|ATOM)', s) else None
        for g in pending:
            if dst is not None and dst in g['a']: hazards.append((hex(a), s, 'writes an A register in flight'))
            if any(r in g['acc'] for r in regs): hazards.append((hex(a), s, 'touches an accumulator in flight'))
    print(name, 'hazards:', len(hazards))
    for h in hazards[:8]: print('   ', h)

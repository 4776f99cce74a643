import sys,re,collections,statistics
d=collections.defaultdict(lambda: collections.defaultdict(list))
for l in open(sys.argv[1]):
    if not l.startswith(('base ','new ')): continue
    who=l.split()[0]
    cells=[c.strip() for c in l.split('|')]
    if 'attn' in cells[0]:
        if cells[1]=='precision': continue
        key='attn '+cells[2]; tf=float(cells[6])
    else:
        key=cells[0].split(' ',1)[1]+' '+cells[3]+' -> '+cells[2]; tf=float(cells[6])
    d[key][who].append(tf)
print(f"| call | base TFLOP/s (per round) | new TFLOP/s (per round) | new / base (medians) |")
print("| --- | --- | --- | --- |")
for k,v in d.items():
    b,n=v['base'],v['new']
    if not b or not n: continue
    r=statistics.median(n)/statistics.median(b)
    print(f"| {k} | {', '.join(f'{x:.0f}' for x in b)} | {', '.join(f'{x:.0f}' for x in n)} | {100*r:.1f}% |")

import collections,sys
d=collections.defaultdict(list); toks={}
for line in open(sys.argv[1]):
    f=line.split(); rnd,v,r,dt,b,ms=f[:6]; d[(v,r,dt,int(b))].append(float(ms)); toks[(v,r,dt,int(b),rnd)]=' '.join(f[6:])
vs=[]
for k in d:
    if (k[0],k[1],k[2]) not in vs: vs.append((k[0],k[1],k[2]))
Bs=[1,2,4,8,16,32,64]
for r in ['0.5','1.0']:
  for dt in ['auto','fp8']:
    if ('main',r,dt,1) not in d: continue
    print(f"ratio {r} {dt}")
    for v in [x for x in vs if x[1]==r and x[2]==dt]:
        row=[]
        for b in Bs:
            m=sum(d[(v[0],r,dt,b)])/len(d[(v[0],r,dt,b)]); mb=sum(d[('main',r,dt,b)])/len(d[('main',r,dt,b)])
            row.append(f"{m:.3f}({100*(m/mb-1):+.1f})")
        print(f"  {v[0]:8s}", ' '.join(row))
for k,t in toks.items():
    mk=('main',)+k[1:]
    if toks.get(mk)!=t: print('tokens differ',k, t, '| main', toks.get(mk))

"""Recompute Weft commit, manifest and run ids from docs/format.md alone.

Usage: python3 docs/verify_ids.py [DIR ...]   (default versions/testdata mix/testdata)
Each DIR/KIND-ID.json (KIND: commit, manifest, run) must hash to ID; exits 1
on a mismatch.
"""
import json, hashlib, struct, sys, datetime, base64
def uv(n):
    out=b''
    while True:
        b=n&0x7f; n>>=7
        if n: out+=bytes([b|0x80])
        else: return out+bytes([b])
def enc(kind, fields, v=1):
    buf=b'weft:'+kind.encode()+b':'+uv(v)
    for k in sorted(fields):
        v=fields[k]
        if isinstance(v,int): v=struct.pack('>q',v)
        elif isinstance(v,str): v=v.encode()
        buf+=uv(len(k))+k.encode()+uv(len(v))+v
    return buf
def commit(c):
    t=c['time']; # RFC3339 nano
    d,frac=t.rstrip('Z').split('.') if '.' in t else (t.rstrip('Z'),'0')
    secs=int(datetime.datetime.fromisoformat(d).replace(tzinfo=datetime.timezone.utc).timestamp())
    ns=secs*10**9+int(frac.ljust(9,'0'))
    return enc('commit',{'message':c['message'],'parent':c.get('parent',''),'project':c['project'],'tables':enc('tables',c['tables']),'time':ns})
def manifest(m):
    # Format 1: no media. Format 2 (with "media"): every kind at version 2,
    # plus the field "media", a list of KIND media_object {path, sha256, size}.
    v=m['format']; assert v==(2 if m.get('media') else 1), 'format %d with %d media' % (v, len(m.get('media') or []))
    files=enc('files',{'%010d'%i: enc('file',{'path':f['path'],'row_groups':enc('row_groups',{'%010d'%j:n for j,n in enumerate(f['row_groups'])},v),'rows':f['rows'],'size':f['size']},v) for i,f in enumerate(m['files'])},v)
    fields={'files':files,'schema':base64.b64decode(m['schema']),'table':m['table']}
    if v==2:
        fields['media']=enc('media',{'%010d'%i: enc('media_object',{'path':o['path'],'sha256':o['sha256'],'size':o['size']},2) for i,o in enumerate(m['media'])},2)
    return enc('manifest',fields,v)
# Run ids (format.md "Run record", sampler/doc.go "Run id"): big-endian
# uint64s and length-prefixed strings; weights reduced to integers first.
from decimal import Decimal
from math import gcd
def reduce_weights(ws):
    ds=[Decimal(repr(float(w))).as_tuple() for w in ws]
    lo=min(d.exponent for d in ds)
    us=[int(''.join(map(str,d.digits)))*10**(d.exponent-lo) for d in ds]
    g=0
    for u in us: g=gcd(g,u)
    us=[u//g for u in us]
    total=sum(us)
    if total>1<<62:
        out=[]
        for u in us:
            q,r=divmod(u<<61,total)
            if 2*r>total or (2*r==total and q&1): q+=1
            out.append(max(q,1))
        g=0
        for u in out: g=gcd(g,u)
        us=[u//g for u in out]
    return us
# Canonical JSON (format.md "Run record", windows): keys sorted, no spaces,
# numbers as written, strings as Go's encoding/json writes them.
class Num(str): pass
def gostr(x):
    x=json.dumps(x,ensure_ascii=False)
    return x.replace('<','\\u003c').replace('>','\\u003e').replace('&','\\u0026').replace('\u2028','\\u2028').replace('\u2029','\\u2029')
def canon(v):
    if isinstance(v,Num): return str(v)
    if isinstance(v,str): return gostr(v)
    if isinstance(v,dict): return '{'+','.join(gostr(k)+':'+canon(v[k]) for k in sorted(v))+'}'
    if isinstance(v,list): return '['+','.join(canon(x) for x in v)+']'
    return {True:'true',False:'false',None:'null'}[v]
def run(r, raw):
    def u64(v): return struct.pack('>Q',v)
    def st(x): x=x.encode(); return u64(len(x))+x
    buf=st('weft/sampler/run')+u64(1)+u64(r['seed'])+u64(r['batch_size'])+u64(r['steps'])+u64(r['shuffle']['buffer_rows'])+u64(len(r['components']))
    exact=json.loads(raw,parse_int=Num,parse_float=Num)['components']
    for i,(c,u) in enumerate(zip(r['components'],reduce_weights([c['weight'] for c in r['components']]))):
        blocks=c.get('blocks') or [c['rows']]
        ident=[canon('weft/mix/1'),canon(c['project']),canon(c['table']),canon(c['commit']),canon(c['columns'])]
        if exact[i].get('windows'): ident.append(canon(exact[i]['windows']))  # only when present
        buf+=u64(u)+u64(c['rows'])+u64(len(blocks))+b''.join(u64(b) for b in blocks)+st('['+','.join(ident)+']')
    return buf
import glob,os
roots = sys.argv[1:] or ['versions/testdata', 'mix/testdata']
files = [f for root in roots for f in glob.glob(os.path.join(root, '*.json'))]
if not files:
    sys.exit('no golden objects in ' + ' '.join(roots))
bad = 0
for f in sorted(files):
    kind,id=os.path.basename(f)[:-5].split('-',1)
    raw=open(f,encoding='utf-8').read()
    o=json.loads(raw)
    h=hashlib.sha256(run(o,raw) if kind=='run' else {'commit':commit,'manifest':manifest}[kind](o)).hexdigest()
    print(kind, id[:12], "ok" if h == id else "MISMATCH: computes " + h)
    bad += h != id
sys.exit(1 if bad else 0)

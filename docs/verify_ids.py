"""Recompute Weft commit and manifest ids from docs/format.md alone.

Usage: python3 docs/verify_ids.py [DIR]   (default versions/testdata)
Each DIR/KIND-ID.json must hash to ID; exits 1 on a mismatch.
"""
import json, hashlib, struct, sys, datetime, base64
def uv(n):
    out=b''
    while True:
        b=n&0x7f; n>>=7
        if n: out+=bytes([b|0x80])
        else: return out+bytes([b])
def enc(kind, fields):
    buf=b'weft:'+kind.encode()+b':'+uv(1)
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
    files=enc('files',{'%010d'%i: enc('file',{'path':f['path'],'row_groups':enc('row_groups',{'%010d'%j:n for j,n in enumerate(f['row_groups'])}),'rows':f['rows'],'size':f['size']}) for i,f in enumerate(m['files'])})
    return enc('manifest',{'files':files,'schema':base64.b64decode(m['schema']),'table':m['table']})
import glob,os
root = sys.argv[1] if len(sys.argv) > 1 else 'versions/testdata'
files = glob.glob(os.path.join(root, '*.json'))
if not files:
    sys.exit('no golden objects in ' + root)
bad = 0
for f in sorted(files):
    kind,id=os.path.basename(f)[:-5].split('-',1)
    o=json.load(open(f))
    h=hashlib.sha256((commit if kind=='commit' else manifest)(o)).hexdigest()
    print(kind, id[:12], "ok" if h == id else "MISMATCH: computes " + h)
    bad += h != id
sys.exit(1 if bad else 0)

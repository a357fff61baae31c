import re,collections,sys
def funcs(path):
    t='\n'+open(path).read()
    for p in re.split(r'\n\s*Function : ',t)[1:]:
        yield p.split('\n',1)[0].strip(), p
def parse(p):
    ins=[];labels={};pending=[]
    for l in p.split('\n'):
        m=re.match(r'\s*\.(L_x_\d+):',l)
        if m: pending.append(m.group(1)); continue
        m=re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;',l)
        if m:
            a=int(m.group(1),16)
            for lb in pending: labels[lb]=a
            pending=[]
            ins.append((a,m.group(2)))
    return ins,labels
def op(i):
    w=i.split()
    k=0
    while k<len(w) and (w[k].startswith('@')): k+=1
    return w[k].split('.')[0] if k<len(w) else '?'
def loops(path,pat):
    for name,p in funcs(path):
        if pat not in name: continue
        ins,labels=parse(p)
        addr=[a for a,_ in ins]
        res=[]
        for a,i in ins:
            m=re.search(r'BRA (0x[0-9a-f]+)',i)
            if m and op(i)=='BRA' and int(m.group(1),16)<a:
                lo=int(m.group(1),16)
                body=[x for x in ins if lo<=x[0]<=a]
                c=collections.Counter(op(x[1]) for x in body)
                res.append((lo,a,len(body),c))
        for lo,a,n,c in res:
            if c['HGMMA']>=16:
                print(path.split('/')[-1], name[-60:], hex(lo),hex(a),'instructions',n, 'HGMMA',c['HGMMA'])
                print('   ', ', '.join('%s %d'%(k,v) for k,v in c.most_common(40)))
for path,pat in [(a.split(':')[0],a.split(':')[1]) for a in sys.argv[1:]]:
    loops(path,pat)

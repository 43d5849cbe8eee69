"""bench/torch_validate/bucket_rows.py SRC OUT: each cell of SRC (a
run.sh output) against OUT (repredict.sh's): the steady step time
predicted and measured, and per (rank, bucket) the median launch-to-end
time of its all_reduce over the steps after the first, predicted and
measured; per cell the median |error| of those rows, over all cells the
median, p95 and maximum."""
import glob
import json
import os
import re
import statistics
import sys

SRC=sys.argv[1]
def pred(path):
    rows={}
    for l in open(path):
        if l.startswith('#') or l.startswith('rank'): continue
        f=l.rstrip('\n').split('\t')
        if len(f)<13: continue
        rank,kind,name,dur,label=f[0],f[4],f[5],float(f[10]),f[11]
        if kind=='coll' and name=='all_reduce':
            rows.setdefault((int(rank),label),[]).append(dur/1e3)
    return rows
def meas(d):
    rows={}
    for f in sorted(glob.glob(d+'/timeline-rank*.json')):
        r=int(f.split('rank')[-1].split('.')[0])
        for e in json.load(open(f))['traceEvents']:
            if e.get('ph')=='X' and e.get('name')=='all_reduce':
                rows.setdefault((r,e['args'].get('label','')),[]).append(e['dur']/1e3)
    return rows
def steps(path):
    # step from log line
    for l in open(path):
        if l.startswith('steps (from'):
            v=[float(x) for x in l.split(':')[1].split('ms')[0].split()]
            return v
out=sys.argv[2]
allb=[];alls=[]
for rate in ['50Mbit','200Mbit','800Mbit']:
  for var in ['plain','straggler']:
    for b in ['b1','b5','b25','b100']:
      o=f'{out}/{rate}/{var}/{b}'
      if not os.path.exists(o+'/predicted/timeline.tsv'): continue
      P=pred(o+'/predicted/timeline.tsv'); M=meas(f'{SRC}/{rate}/{var}/{b}/ddp/measured')
      errs=[]
      desc=[]
      for k in sorted(P):
        if k not in M: continue
        p=P[k][1:]; m=M[k][1:]   # skip iteration 0
        n=min(len(p),len(m))
        if n==0: continue
        # size-specific: compare medians over steady ops
        pm=statistics.median(p[:n]); mm=statistics.median(m[:n])
        e=(pm-mm)/mm*100; errs.append(abs(e))
        if k[0]==0: desc.append(f'{k[1]}:{pm:.0f}/{mm:.0f}({e:+.1f}%)')
      st=steps(o+'/log'); 
      rep=open(f'{SRC}/{rate}/{var}/{b}/report.md').read()
      m_=re.search(r'step time predicted ([\d.]+) s, measured ([\d.]+) s',rep)
      ms=float(m_.group(2))*1e3
      ps=statistics.mean(st[1:])
      se=(ps-ms)/ms*100
      alls.append(abs(se)); allb+=errs
      print(f'{rate:8} {var:9} {b:5} step {ps:8.1f}/{ms:8.1f} {se:+5.1f}%  buckets med {statistics.median(errs) if errs else 0:5.1f}%  '+' '.join(desc))
print(f'steps: median {statistics.median(alls):.2f}% max {max(alls):.2f}%; bucket rows: median {statistics.median(allb):.1f}% p95 {sorted(allb)[int(0.95*len(allb))]:.1f}% max {max(allb):.1f}%')

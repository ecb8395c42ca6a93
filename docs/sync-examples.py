#!/usr/bin/env python3
# Rewrites each ```swift block of README.md and the DocC articles from the example it was taken
# from: the example line equal to the block's first line, through the example line equal to its
# last line.
import glob,os
root=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ex={}
for f in glob.glob(root+'/Tests/HaulDocumentationTests/Examples/*.swift'):
    ex[f]=open(f).read().split('\n')
docs=[root+'/README.md']+glob.glob(root+'/Sources/*/*.docc/*.md')
for d in docs:
    lines=open(d).read().split('\n'); out=[]; i=0; changed=False
    while i<len(lines):
        if lines[i].strip()=='```swift':
            j=i+1
            while lines[j].strip()!='```': j+=1
            block=[l for l in lines[i+1:j] if l.strip()]
            first,last=block[0].strip(),block[-1].strip()
            new=None
            for f,el in ex.items():
                for a,l in enumerate(el):
                    if l.strip()==first:
                        indent=len(l)-len(l.lstrip())
                        for b in range(a,len(el)):
                            if el[b].strip()==last and (len(el[b])-len(el[b].lstrip()))==indent:
                                new=[x[indent:] if x.strip() else '' for x in el[a:b+1]]; break
                        if new: break
                if new: break
            if new is None: print('NOT FOUND',d,first); new=lines[i+1:j]
            if new!=lines[i+1:j]: changed=True
            out+=['```swift']+new+['```']; i=j+1
        else:
            out.append(lines[i]); i+=1
    if changed:
        open(d,'w').write('\n'.join(out)); print('updated',os.path.relpath(d,root))

// The web UI's live charts (harness/load/web_ui.py serves this file at /harness/charts.js): no
// dependencies; polls the test's timeline and draws one SVG line chart per measure, both axes
// labelled with their units. harnessTab puts the charts into the "Live charts" tab of Locust's page.
const HARNESS_CHARTS=[
 {key:"tokens",title:"Output tokens/s (requests finished in the last 10 s)",unit:"tokens/s",
  series:[["output_tokens_per_s","output tokens/s","#1f77b4"]]},
 {key:"in_flight",title:"Requests in flight",unit:"requests",series:[["in_flight","in flight","#2ca02c"]]},
 {key:"ttft",title:"TTFT: time to first token",unit:"s",
  series:[["ttft_p50_s","p50","#1f77b4"],["ttft_p95_s","p95","#d62728"]]},
 {key:"tpot",title:"TPOT: time per output token",unit:"s",
  series:[["tpot_p50_s","p50","#1f77b4"],["tpot_p95_s","p95","#d62728"]]},
 {key:"itl",title:"ITL: gap between tokens",unit:"s",
  series:[["itl_p50_s","p50","#1f77b4"],["itl_p95_s","p95","#d62728"]]}];
function harnessFmt(v){if(v===0)return "0";const a=Math.abs(v);
 return a>=100?v.toFixed(0):a>=1?v.toFixed(2).replace(/\.?0+$/,""):v.toPrecision(2);}
function harnessChart(c,points){const W=680,H=220,L=70,R=20,T=14,B=46,w=W-L-R,h=H-T-B;
 const xmax=Math.max(10,...points.map(p=>p.t_s));let ys=[];
 for(const [k] of c.series)for(const p of points)if(p[k]!=null)ys.push(p[k]);
 const ymax=ys.length?Math.max(...ys)*1.1||1:1;const X=t=>L+w*t/xmax,Y=v=>T+h-h*v/ymax;
 let s=`<svg data-chart="${c.key}" width="${W}" height="${H}" style="background:#fff;border:1px solid #ccc">`;
 s+=`<line x1="${L}" y1="${T+h}" x2="${L+w}" y2="${T+h}" stroke="#444"/><line x1="${L}" y1="${T}" x2="${L}" y2="${T+h}" stroke="#444"/>`;
 for(const f of [0,0.5,1]){const yv=ymax*f,xv=xmax*f;
  s+=`<text class="tick y" x="${L-6}" y="${Y(yv)+4}" font-size="11" text-anchor="end">${harnessFmt(yv)}</text>`;
  s+=`<line x1="${L}" y1="${Y(yv)}" x2="${L+w}" y2="${Y(yv)}" stroke="#eee"/>`;
  s+=`<text class="tick x" x="${X(xv)}" y="${T+h+15}" font-size="11" text-anchor="middle">${harnessFmt(xv)}</text>`;}
 s+=`<text class="axis-label x" x="${L+w/2}" y="${H-6}" font-size="12" text-anchor="middle">time since the test started (s)</text>`;
 s+=`<text class="axis-label y" transform="translate(14,${T+h/2}) rotate(-90)" font-size="12" text-anchor="middle">${c.unit}</text>`;
 for(const [k,,col] of c.series){const d=points.filter(p=>p[k]!=null).map((p,i)=>`${i?"L":"M"}${X(p.t_s).toFixed(1)},${Y(p[k]).toFixed(1)}`).join("");
  if(d)s+=`<path class="series" data-series="${k}" d="${d}" fill="none" stroke="${col}" stroke-width="2"/>`;}
 const legend=c.series.map(([,name,col])=>`<span style="color:${col};margin-right:1em">&#9644; ${name}</span>`).join("");
 return `<h3 style="margin:.8em 0 .2em">${c.title} (${c.unit})</h3><div>${legend}</div>${s}</svg>`;}
function harnessDraw(el,points){let out=points.length?"":
 `<p class="harness-empty">No request of this test has finished yet: the charts start with the first one (RESET and a new test clear them).</p>`;
 for(const c of HARNESS_CHARTS)out+=harnessChart(c,points);el.innerHTML=out;}
function harnessCharts(el,url){let alive=true;
 async function poll(){if(!alive)return;try{const r=await fetch(url,{cache:"no-store"});const j=await r.json();
  if(alive)harnessDraw(el,j.timeline||[]);}catch(e){}}
 poll();const id=setInterval(poll,2000);return ()=>{alive=false;clearInterval(id);};}
function harnessTab(title,url){let el=null,stop=null,hidden=null;
 function sync(){const tab=[...document.querySelectorAll('[role=tab]')].find(t=>t.textContent.trim()===title);
  const on=!!tab&&tab.getAttribute('aria-selected')==='true';
  if(on){const box=tab.closest('.MuiContainer-root');if(!box)return;
   const table=box.querySelector('.MuiTableContainer-root');
   if(table&&table!==hidden){if(hidden)hidden.style.display='';hidden=table;table.style.display='none';}
   if(!el||!box.contains(el)){if(stop)stop();el=document.createElement('div');el.id='harness-live-charts';
    box.appendChild(el);stop=harnessCharts(el,url);}}
  else if(el){stop();stop=null;el.remove();el=null;if(hidden){hidden.style.display='';hidden=null;}}}
 setInterval(sync,250);}

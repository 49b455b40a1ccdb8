// Session 15: a 4-column lookup at P = 4096 (L1/L2-resident table) by vgatherdps (SoA columns
// and AoS rows) against 128-bit row loads + a 4x4 transpose, one thread, 2^14 elements.
// gcc -O3 -march=x86-64-v4 gather4.c -o gather4 && ./gather4
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
float rows[4096][4] __attribute__((aligned(64)));
float cols[4][4096] __attribute__((aligned(64)));
int main(){
  int n=1<<14; float *x=aligned_alloc(64,n*4),*y=aligned_alloc(64,n*4);
  for(int i=0;i<n;i++) x[i]=(rand()/(float)RAND_MAX)*4095.9f;
  for(int k=0;k<4;k++)for(int i=0;i<4096;i++){rows[i][k]=rand()/(float)RAND_MAX;cols[k][i]=rows[i][k];}
  for(int round=0;round<3;round++) for(int mode=0;mode<3;mode++){
   double best=1e9;
   for(int rep=0;rep<300;rep++){
    double t0=now();
    for(int j=0;j<n;j+=16){
      __m512 xv=_mm512_load_ps(x+j);
      __m512i idx=_mm512_cvttps_epi32(xv);
      __m512 t=_mm512_sub_ps(xv,_mm512_cvtepi32_ps(idx));
      __m512 c0,c1,c2,c3;
      if(mode==0){ // gather from SoA columns
        c0=_mm512_i32gather_ps(idx,cols[0],4);c1=_mm512_i32gather_ps(idx,cols[1],4);
        c2=_mm512_i32gather_ps(idx,cols[2],4);c3=_mm512_i32gather_ps(idx,cols[3],4);
      } else if(mode==1){ // gather from AoS rows
        __m512i o=_mm512_slli_epi32(idx,2);
        c0=_mm512_i32gather_ps(o,&rows[0][0],4);c1=_mm512_i32gather_ps(o,&rows[0][1],4);
        c2=_mm512_i32gather_ps(o,&rows[0][2],4);c3=_mm512_i32gather_ps(o,&rows[0][3],4);
      } else {
        __m512i o=_mm512_slli_epi32(idx,2);
        unsigned long long p[8] __attribute__((aligned(64)));
        _mm512_store_si512(p,o);
#define F(i) ((i)%2 ? (unsigned)(p[(i)/2]>>32) : (unsigned)p[(i)/2])
#define LF(i) _mm_loadu_ps(&rows[0][0]+F(i))
        __m512 z[4];
        for(int i=0;i<4;i++){z[i]=_mm512_castps128_ps512(LF(i));z[i]=_mm512_insertf32x4(z[i],LF(i+4),1);z[i]=_mm512_insertf32x4(z[i],LF(i+8),2);z[i]=_mm512_insertf32x4(z[i],LF(i+12),3);}
        __m512 t0=_mm512_unpacklo_ps(z[0],z[1]),t1=_mm512_unpackhi_ps(z[0],z[1]),t2=_mm512_unpacklo_ps(z[2],z[3]),t3=_mm512_unpackhi_ps(z[2],z[3]);
        c0=_mm512_shuffle_ps(t0,t2,0x44),c1=_mm512_shuffle_ps(t0,t2,0xEE),c2=_mm512_shuffle_ps(t1,t3,0x44),c3=_mm512_shuffle_ps(t1,t3,0xEE);
      }
      _mm512_store_ps(y+j,_mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(c0,t,c1),t,c2),t,c3));
    }
    double dt=now()-t0; if(dt<best)best=dt;
   }
   printf("mode %d (%s): %.3f ns/elem\n",mode,mode==0?"gather SoA":mode==1?"gather AoS":"rows+transpose",best/n*1e9);
  }
  return (int)y[5];
}
